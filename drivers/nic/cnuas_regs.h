/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * cnuas-vnic (PCI 1af4:10f0) register map: BAR0, 4 KiB, 32-bit little-endian
 * registers.  The contract is docs/devices.md; change it there, in the QEMU
 * model and in the reference model at once.
 */
#ifndef CNUAS_REGS_H
#define CNUAS_REGS_H

#include <linux/bits.h>

#define CNUAS_VNIC_VENDOR_ID	0x1af4
#define CNUAS_VNIC_DEVICE_ID	0x10f0
#define CNUAS_VNIC_BAR		0
#define CNUAS_VNIC_BAR_SIZE	0x1000

#define CNUAS_REG_TX_ADDR_LO	0x00	/* rw: guest-physical frame address */
#define CNUAS_REG_TX_ADDR_HI	0x04	/* rw: upper 32 bits */
#define CNUAS_REG_TX_LEN	0x08	/* rw: 1..CNUAS_VNIC_MAX_FRAME */
#define CNUAS_REG_TX_DOORBELL	0x0c	/* w: any write transmits */
#define CNUAS_REG_RX_ADDR_LO	0x10	/* rw: landing address; 0 = unarmed */
#define CNUAS_REG_RX_ADDR_HI	0x14	/* rw: upper 32 bits */
#define CNUAS_REG_RX_LEN	0x18	/* ro: length of the delivered frame */
#define CNUAS_REG_RX_STATUS	0x1c	/* rw: 1 while a frame waits; 0 releases */
#define CNUAS_REG_IRQ_STATUS	0x20	/* w1c: pending causes */
#define CNUAS_REG_IRQ_MASK	0x24	/* rw: enabled causes */
#define CNUAS_REG_LINK_STATUS	0x28	/* ro: bit 0 socket connected */
#define CNUAS_REG_MAC_LO	0x2c	/* ro: MAC bytes 0..3, byte 0 in bits 7:0 */
#define CNUAS_REG_MAC_HI	0x30	/* ro: MAC bytes 4..5 */

/* RX_STATUS */
#define CNUAS_RX_STATUS_READY	BIT(0)

/* IRQ_STATUS / IRQ_MASK causes */
#define CNUAS_IRQ_RX		BIT(0)	/* a received frame waits */
#define CNUAS_IRQ_TX		BIT(1)	/* the doorbell's frame is gone */
#define CNUAS_IRQ_LINK		BIT(2)	/* LINK_STATUS changed */
#define CNUAS_IRQ_ALL		(CNUAS_IRQ_RX | CNUAS_IRQ_TX | CNUAS_IRQ_LINK)

/* LINK_STATUS */
#define CNUAS_LINK_UP		BIT(0)

/* Largest frame in either direction (TX_LEN, RX_LEN). */
#define CNUAS_VNIC_MAX_FRAME	9216

#endif /* CNUAS_REGS_H */
