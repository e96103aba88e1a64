/*
 * PCI behaviour shared by cnuas-vnic and cnuasgpu; see cnuas_pci.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msi.h"
#include "cnuas_pci.h"

bool cnuas_pci_access_ok(const char *who, hwaddr addr, unsigned size,
                         bool write)
{
    if (size == 4 && !(addr & 3)) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR,
                  "%s: %u-byte %s at 0x%" HWADDR_PRIx " refused "
                  "(only aligned 32-bit accesses)\n", who, size,
                  write ? "write" : "read", addr);
    return false;
}

void cnuas_pci_update_irq(PCIDevice *pdev, uint32_t pending,
                          uint32_t *asserted)
{
    /* Edge detection, so a cause raised while another pends is not lost. */
    uint32_t rising = pending & ~*asserted;

    *asserted = pending;
    if (msi_enabled(pdev)) {
        if (rising) {
            msi_notify(pdev, 0);
        }
    } else {
        pci_set_irq(pdev, pending != 0);
    }
}

void cnuas_pci_config_written(PCIDevice *pdev, uint32_t pending)
{
    if (!msi_enabled(pdev)) {
        pci_set_irq(pdev, pending != 0);
    }
}

void cnuas_pci_fill_link(PCIDevice *pdev, unsigned width, unsigned speed)
{
    uint8_t *exp_cap = pdev->config + pdev->exp.exp_cap;
    uint32_t supported = 0;
    unsigned i;

    pci_long_test_and_clear_mask(exp_cap + PCI_EXP_LNKCAP,
                                 PCI_EXP_LNKCAP_MLW | PCI_EXP_LNKCAP_SLS);
    pci_long_test_and_set_mask(exp_cap + PCI_EXP_LNKCAP,
                               QEMU_PCI_EXP_LNKCAP_MLW(width) |
                               QEMU_PCI_EXP_LNKCAP_MLS(speed));
    pci_word_test_and_clear_mask(exp_cap + PCI_EXP_LNKSTA,
                                 PCI_EXP_LNKSTA_CLS | PCI_EXP_LNKSTA_NLW);
    pci_word_test_and_set_mask(exp_cap + PCI_EXP_LNKSTA,
                               QEMU_PCI_EXP_LNKSTA_NLW(width) |
                               QEMU_PCI_EXP_LNKSTA_CLS(speed));
    /* bit 1 is 2.5 GT/s, bit 2 is 5 GT/s, ... */
    for (i = 1; i <= speed; i++) {
        supported |= 1u << i;
    }
    pci_set_long(exp_cap + PCI_EXP_LNKCAP2, supported);
}
