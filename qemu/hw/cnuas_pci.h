/*
 * What the Cnuas PCI functions share besides the wire (cnuas_sock.h): the
 * interrupt rule, the 32-bit-only register access rule and the PCIe link
 * fields, each as docs/devices.md ("Both devices") states it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_CNUAS_PCI_H
#define HW_CNUAS_PCI_H

#include "exec/hwaddr.h"
#include "hw/pci/pci.h"

/*
 * MemoryRegionOps access limits for a register BAR: every size and alignment
 * reaches the handlers whole, which refuse all but aligned 32-bit accesses
 * (cnuas_pci_access_ok). A narrower .valid/.impl would let the memory core
 * split an 8-byte access into two 32-bit ones on some paths (qtest, KVM MMIO
 * exits) and refuse it on others (TCG): the outcome would depend on the
 * accelerator.
 */
#define CNUAS_PCI_REGS_VALID    { .min_access_size = 1, \
                                  .max_access_size = 8, \
                                  .unaligned = true }

/*
 * True for an aligned 32-bit access; anything else is logged as a guest
 * error (reads then return 0, writes do nothing). @who prefixes the log line.
 */
bool cnuas_pci_access_ok(const char *who, hwaddr addr, unsigned size,
                         bool write);

/*
 * Signal @pending (IRQ_STATUS & IRQ_MASK) after a device event: with MSI, one
 * message when a bit is set that @asserted (the last pending) did not hold;
 * without, INTx follows @pending. Updates @asserted.
 */
void cnuas_pci_update_irq(PCIDevice *pdev, uint32_t pending,
                          uint32_t *asserted);

/*
 * config_write tail: disabling MSI hands a cause that is still pending back
 * to INTx at once (enabling it deasserted INTx in the default handler).
 */
void cnuas_pci_config_written(PCIDevice *pdev, uint32_t pending);

/*
 * Advertise @width lanes at @speed (the PCIe "Max Link Speed" code: 1 is
 * 2.5 GT/s .. 6 is 64 GT/s) as maximum and, the link being virtual, as
 * negotiated; the Supported Link Speeds vector lists every speed up to it.
 * QEMU 7.2 fills these only for slots, so an endpoint states its own.
 */
void cnuas_pci_fill_link(PCIDevice *pdev, unsigned width, unsigned speed);

#endif
