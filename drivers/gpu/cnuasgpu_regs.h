/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuasgpu (PCI 1af4:10f1) register map: BAR0, 32-bit little-endian
 * registers; BAR1 is device memory.  The contract is docs/devices.md (cnuasgpu);
 * change it there, in the QEMU model and in the reference model at once.
 */
#ifndef CNUASGPU_REGS_H
#define CNUASGPU_REGS_H

#include <linux/bits.h>

#define CNUASGPU_DEVICE_ID		0x10f1	/* vendor: PCI_VENDOR_ID_REDHAT_QUMRANET */

/* Identification block (read-only). */
#define CNUASGPU_REG_VENDOR_ID		0x000
#define CNUASGPU_REG_DEVICE_ID		0x004
#define CNUASGPU_REG_REVISION		0x008
#define CNUASGPU_REG_FW_VERSION		0x00c
#define CNUASGPU_REG_GPU_ID		0x010
#define CNUASGPU_REG_SM_COUNT		0x014
#define CNUASGPU_REG_LANES_PER_SM	0x018
#define CNUASGPU_REG_TENSOR_SIZE	0x01c
#define CNUASGPU_REG_DEVMEM_SIZE_LO	0x020	/* BAR1 size, bits 31:0 */
#define CNUASGPU_REG_DEVMEM_SIZE_HI	0x024	/* bits 63:32 */

/* Interrupts. */
#define CNUASGPU_REG_IRQ_STATUS		0x100	/* w1c: pending causes */
#define CNUASGPU_REG_IRQ_MASK		0x104	/* rw: enabled causes */

/* CnuasLink; frame buffers are BAR1 offsets. */
#define CNUASGPU_REG_LINK_STATUS	0x200	/* ro */
#define CNUASGPU_REG_LINK_TX_OFFSET_LO	0x204
#define CNUASGPU_REG_LINK_TX_OFFSET_HI	0x208
#define CNUASGPU_REG_LINK_TX_LEN	0x20c	/* header and payload */
#define CNUASGPU_REG_LINK_TX_DOORBELL	0x210	/* w: non-zero transmits */
#define CNUASGPU_REG_LINK_RX_OFFSET_LO	0x214
#define CNUASGPU_REG_LINK_RX_OFFSET_HI	0x218
#define CNUASGPU_REG_LINK_RX_BUF_SIZE	0x21c
#define CNUASGPU_REG_LINK_RX_LEN	0x220	/* ro: length of the landed frame */
#define CNUASGPU_REG_LINK_RX_CONSUME	0x224	/* w: non-zero releases the landed frame */

/* IRQ_STATUS / IRQ_MASK causes */
#define CNUASGPU_IRQ_LINK_TX_DONE	BIT(0)
#define CNUASGPU_IRQ_LINK_RX_READY	BIT(1)

/* LINK_STATUS */
#define CNUASGPU_LINK_STATUS_UP		BIT(0)
#define CNUASGPU_LINK_STATUS_RX_READY	BIT(1)

#endif /* CNUASGPU_REGS_H */
