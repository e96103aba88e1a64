/*
 * cnuas-vnic: a PCIe network function whose wire is an AF_UNIX
 * SOCK_SEQPACKET socket (one datagram = one frame, no header of ours).
 *
 * The register map and behaviour are the contract in docs/devices.md
 * (cnuas-vnic);
 * the TypeScript reference model harness/models/vnic.ts is written from the
 * same contract and checked against this file by a qtest differential oracle.
 * Where the original design left a choice open, this device follows the
 * decision docs/devices.md records (marked "decided here").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msi.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "sysemu/dma.h"
#include "qom/object.h"
#include "cnuas_pci.h"
#include "cnuas_sock.h"

#define TYPE_CNUAS_VNIC "cnuas-vnic"
OBJECT_DECLARE_SIMPLE_TYPE(CnuasVnicState, CNUAS_VNIC)

#define CNUAS_VNIC_VENDOR_ID    0x1af4
#define CNUAS_VNIC_DEVICE_ID    0x10f0
#define CNUAS_VNIC_REVISION     0x00
#define CNUAS_VNIC_MMIO_SIZE    (4 * KiB)
#define CNUAS_VNIC_MAX_FRAME    9216

/* BAR0 registers */
#define REG_TX_ADDR_LO      0x00
#define REG_TX_ADDR_HI      0x04
#define REG_TX_LEN          0x08
#define REG_TX_DOORBELL     0x0c
#define REG_RX_ADDR_LO      0x10
#define REG_RX_ADDR_HI      0x14
#define REG_RX_LEN          0x18
#define REG_RX_STATUS       0x1c
#define REG_IRQ_STATUS      0x20
#define REG_IRQ_MASK        0x24
#define REG_LINK_STATUS     0x28
#define REG_MAC_LO          0x2c
#define REG_MAC_HI          0x30

/* Interrupt causes (IRQ_STATUS / IRQ_MASK) */
#define IRQ_RX              (1u << 0)
#define IRQ_TX              (1u << 1)
#define IRQ_LINK            (1u << 2)
#define IRQ_ALL             (IRQ_RX | IRQ_TX | IRQ_LINK)

struct CnuasVnicState {
    PCIDevice parent_obj;
    MemoryRegion mmio;

    /* properties */
    char *socket_path;
    MACAddr mac;
    PCIExpLinkSpeed link_speed;
    PCIExpLinkWidth link_width;

    /* registers */
    uint32_t tx_addr_lo;
    uint32_t tx_addr_hi;
    uint32_t tx_len;
    uint32_t rx_addr_lo;
    uint32_t rx_addr_hi;
    uint32_t rx_len;
    uint32_t rx_status;
    uint32_t irq_status;
    uint32_t irq_mask;

    /* IRQ_STATUS & IRQ_MASK as of the last interrupt update (MSI edges) */
    uint32_t irq_asserted;

    /* the wire: down while no connection */
    CnuasSock sock;

    /* bounce buffer; TX and RX never run at the same time (BQL) */
    uint8_t buf[CNUAS_VNIC_MAX_FRAME];
};

static uint64_t vnic_tx_addr(CnuasVnicState *s)
{
    return ((uint64_t)s->tx_addr_hi << 32) | s->tx_addr_lo;
}

static uint64_t vnic_rx_addr(CnuasVnicState *s)
{
    return ((uint64_t)s->rx_addr_hi << 32) | s->rx_addr_lo;
}

/* Called once at the end of every device event. */
static void vnic_update_irq(CnuasVnicState *s)
{
    cnuas_pci_update_irq(PCI_DEVICE(s), s->irq_status & s->irq_mask,
                         &s->irq_asserted);
}

/*
 * The whole range must be RAM (ROM too, for reads) before the device touches
 * any of it (docs/devices.md, "vnic: DMA reaches RAM only").
 * dma_memory_valid() alone would accept MMIO, this function's own BAR0
 * among it: a frame landing on TX_DOORBELL would then run a transmit into
 * s->buf from inside the receive that is copying out of s->buf, and one
 * landing on our config space through MMCONFIG could reset the device in the
 * middle of its own DMA.
 */
static bool vnic_dma_ok(CnuasVnicState *s, uint64_t addr, uint32_t len,
                        DMADirection dir)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    bool is_write = dir == DMA_DIRECTION_FROM_DEVICE;

    if (addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len > 0) {
        hwaddr xlat;
        hwaddr plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen,
                                                   is_write,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!plen || !memory_access_is_direct(mr, is_write)) {
            return false;
        }
        plen = MIN(plen, len);
        addr += plen;
        len -= plen;
    }
    return true;
}

/* Read the socket only while no received frame waits for the driver. */
static void vnic_update_reading(CnuasVnicState *s)
{
    cnuas_sock_set_reading(&s->sock, !s->rx_status);
}

/* Every link change, down or up, is the IRQ_LINK cause. */
static void vnic_link_lost(CnuasVnicState *s)
{
    if (cnuas_sock_drop(&s->sock)) {
        s->irq_status |= IRQ_LINK;
    }
}

/* Land the datagram in s->buf (len bytes) at RX_ADDR, or drop it. */
static void vnic_rx_deliver(CnuasVnicState *s, uint32_t len)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint64_t addr = vnic_rx_addr(s);

    if (addr == 0) {
        return; /* not armed: dropped, as a NIC without buffers would */
    }
    if (!vnic_dma_ok(s, addr, len, DMA_DIRECTION_FROM_DEVICE) ||
        pci_dma_write(pdev, addr, s->buf, len) != MEMTX_OK) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuas-vnic: RX buffer 0x%" PRIx64 "+%u is not "
                      "writable by DMA, frame dropped\n", addr, len);
        return;
    }
    s->rx_len = len;
    s->rx_status = 1;
    s->irq_status |= IRQ_RX;
}

/*
 * Read datagrams until one is delivered (RX_STATUS becomes 1), the socket is
 * empty, or the link is lost.
 */
static void vnic_rx_pump(CnuasVnicState *s)
{
    while (cnuas_sock_is_up(&s->sock) && !s->rx_status) {
        ssize_t n = cnuas_sock_recv(&s->sock, s->buf, sizeof(s->buf));

        if (n == CNUAS_SOCK_AGAIN) {
            break;
        }
        if (n == CNUAS_SOCK_GONE) {
            vnic_link_lost(s);
            break;
        }
        if (n == 0) {
            continue; /* an empty datagram carries no frame */
        }
        if ((size_t)n > sizeof(s->buf)) {
            warn_report_once("cnuas-vnic: dropped datagrams above %d bytes "
                             "from the peer", CNUAS_VNIC_MAX_FRAME);
            continue;
        }
        vnic_rx_deliver(s, n);
    }
    vnic_update_reading(s);
}

static void vnic_rx_ready(void *opaque)
{
    CnuasVnicState *s = opaque;

    vnic_rx_pump(s);
    vnic_update_irq(s);
}

static void vnic_reconnected(void *opaque)
{
    CnuasVnicState *s = opaque;

    s->irq_status |= IRQ_LINK;
    vnic_rx_pump(s);
    vnic_update_irq(s);
}

/*
 * Every loss restarts the retries at 100 ms: with stable_ns 0 this is the
 * contract's "a successful reconnect resets the retry delay".
 */
static const CnuasSockOps vnic_sock_ops = {
    .readable = vnic_rx_ready,
    .reconnected = vnic_reconnected,
    .stable_ns = 0,
};

static void vnic_tx(CnuasVnicState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint64_t addr = vnic_tx_addr(s);
    uint32_t len = s->tx_len;

    if (len == 0 || len > CNUAS_VNIC_MAX_FRAME) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuas-vnic: TX_LEN %u outside 1..%d, doorbell "
                      "rejected\n", len, CNUAS_VNIC_MAX_FRAME);
        return;
    }
    if (!vnic_dma_ok(s, addr, len, DMA_DIRECTION_TO_DEVICE) ||
        pci_dma_read(pdev, addr, s->buf, len) != MEMTX_OK) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuas-vnic: TX frame 0x%" PRIx64 "+%u is not "
                      "readable by DMA, doorbell rejected\n", addr, len);
        return;
    }
    s->irq_status |= IRQ_TX;
    if (!cnuas_sock_is_up(&s->sock)) {
        return; /* link down: dropped, but the driver still hears back */
    }
    /* a full send queue drops the frame; only a dead peer drops the link */
    if (cnuas_sock_send(&s->sock, s->buf, len, 0) == CNUAS_SOCK_BROKEN) {
        vnic_link_lost(s);
    }
}

static uint64_t vnic_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    CnuasVnicState *s = opaque;

    if (!cnuas_pci_access_ok(TYPE_CNUAS_VNIC, addr, size, false)) {
        return 0;
    }

    switch (addr) {
    case REG_TX_ADDR_LO:
        return s->tx_addr_lo;
    case REG_TX_ADDR_HI:
        return s->tx_addr_hi;
    case REG_TX_LEN:
        return s->tx_len;
    case REG_TX_DOORBELL:
        return 0;
    case REG_RX_ADDR_LO:
        return s->rx_addr_lo;
    case REG_RX_ADDR_HI:
        return s->rx_addr_hi;
    case REG_RX_LEN:
        return s->rx_len;
    case REG_RX_STATUS:
        return s->rx_status;
    case REG_IRQ_STATUS:
        return s->irq_status;
    case REG_IRQ_MASK:
        return s->irq_mask;
    case REG_LINK_STATUS:
        return cnuas_sock_is_up(&s->sock) ? 1 : 0;
    case REG_MAC_LO:
        return (uint32_t)ldl_le_p(&s->mac.a[0]);
    case REG_MAC_HI:
        return (uint32_t)lduw_le_p(&s->mac.a[4]);
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuas-vnic: read of unknown register 0x%" HWADDR_PRIx
                      "\n", addr);
        return 0;
    }
}

static void vnic_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    CnuasVnicState *s = opaque;

    if (!cnuas_pci_access_ok(TYPE_CNUAS_VNIC, addr, size, true)) {
        return;
    }

    switch (addr) {
    case REG_TX_ADDR_LO:
        s->tx_addr_lo = val;
        break;
    case REG_TX_ADDR_HI:
        s->tx_addr_hi = val;
        break;
    case REG_TX_LEN:
        s->tx_len = val;
        break;
    case REG_TX_DOORBELL:
        vnic_tx(s);
        break;
    case REG_RX_ADDR_LO:
        s->rx_addr_lo = val;
        break;
    case REG_RX_ADDR_HI:
        s->rx_addr_hi = val;
        break;
    case REG_RX_STATUS:
        if (val != 0) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "cnuas-vnic: RX_STATUS write 0x%" PRIx64
                          " ignored (write 0 to release)\n", val);
        } else if (s->rx_status) {
            s->rx_status = 0;
            vnic_rx_pump(s);
        }
        break;
    case REG_IRQ_STATUS:
        s->irq_status &= ~(uint32_t)val;
        break;
    case REG_IRQ_MASK:
        s->irq_mask = val & IRQ_ALL;
        break;
    case REG_RX_LEN:
    case REG_LINK_STATUS:
    case REG_MAC_LO:
    case REG_MAC_HI:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuas-vnic: write to read-only register 0x%"
                      HWADDR_PRIx " ignored\n", addr);
        return;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuas-vnic: write to unknown register 0x%" HWADDR_PRIx
                      " ignored\n", addr);
        return;
    }
    vnic_update_irq(s);
}

static const MemoryRegionOps vnic_mmio_ops = {
    .read = vnic_mmio_read,
    .write = vnic_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = CNUAS_PCI_REGS_VALID,
    .impl = CNUAS_PCI_REGS_VALID,
};

/*
 * Enabling MSI deasserts INTx (msi_write_config, from the default handler);
 * disabling it hands a cause that is still pending and enabled back to INTx
 * at once, as the line follows IRQ_STATUS & IRQ_MASK whenever MSI is off
 * (docs/devices.md, "Both devices", interrupts: MSI and INTx).
 */
static void vnic_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    CnuasVnicState *s = CNUAS_VNIC(pdev);

    pci_default_write_config(pdev, addr, val, len);
    pcie_cap_flr_write_config(pdev, addr, val, len);
    cnuas_pci_config_written(pdev, s->irq_status & s->irq_mask);
}

static void vnic_realize(PCIDevice *pdev, Error **errp)
{
    CnuasVnicState *s = CNUAS_VNIC(pdev);

    if (!cnuas_sock_path_ok(s->socket_path, "cnuas-vnic: socket_path",
                            errp)) {
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    if (msi_init(pdev, 0, 1, true, false, errp)) {
        return;
    }
    if (pcie_endpoint_cap_init(pdev, 0) < 0) {
        error_setg(errp, "cnuas-vnic: no room for the PCIe capability");
        msi_uninit(pdev);
        return;
    }
    cnuas_pci_fill_link(pdev, s->link_width, s->link_speed);
    pcie_cap_flr_init(pdev);

    memory_region_init_io(&s->mmio, OBJECT(s), &vnic_mmio_ops, s,
                          "cnuas-vnic-mmio", CNUAS_VNIC_MMIO_SIZE);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->mmio);

    qemu_macaddr_default_if_unset(&s->mac);
    cnuas_sock_init(&s->sock, &vnic_sock_ops, s, s->socket_path,
                    TYPE_CNUAS_VNIC);
    vnic_update_reading(s);
}

static void vnic_exit(PCIDevice *pdev)
{
    CnuasVnicState *s = CNUAS_VNIC(pdev);

    cnuas_sock_cleanup(&s->sock);
    pcie_cap_exit(pdev);
    msi_uninit(pdev);
}

static void vnic_reset(DeviceState *dev)
{
    CnuasVnicState *s = CNUAS_VNIC(dev);

    s->tx_addr_lo = 0;
    s->tx_addr_hi = 0;
    s->tx_len = 0;
    s->rx_addr_lo = 0;
    s->rx_addr_hi = 0;
    s->rx_len = 0;
    s->rx_status = 0;
    s->irq_status = 0;
    s->irq_mask = 0;
    s->irq_asserted = 0;
    vnic_rx_pump(s);
    vnic_update_irq(s);
}

/*
 * Migration (docs/devices.md, "vnic: saved state"): the registers and the PCI
 * function travel, the wire does not. The destination's device connected to
 * its own socket_path at realize; the MAC is a property, so each destination
 * keeps its own. Until the VM first runs after a load the socket is held
 * (cnuas_sock.h: a frame landing in guest memory while later devices' state
 * is still loading could be overwritten); then vnic_reconnected() runs, as
 * after a switch restart: the link cause is raised and queued frames read.
 */
static const VMStateDescription vmstate_vnic = {
    .name = TYPE_CNUAS_VNIC,
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, CnuasVnicState),
        VMSTATE_UINT32(tx_addr_lo, CnuasVnicState),
        VMSTATE_UINT32(tx_addr_hi, CnuasVnicState),
        VMSTATE_UINT32(tx_len, CnuasVnicState),
        VMSTATE_UINT32(rx_addr_lo, CnuasVnicState),
        VMSTATE_UINT32(rx_addr_hi, CnuasVnicState),
        VMSTATE_UINT32(rx_len, CnuasVnicState),
        VMSTATE_UINT32(rx_status, CnuasVnicState),
        VMSTATE_UINT32(irq_status, CnuasVnicState),
        VMSTATE_UINT32(irq_mask, CnuasVnicState),
        VMSTATE_UINT32(irq_asserted, CnuasVnicState),
        VMSTATE_END_OF_LIST()
    },
};

static Property vnic_properties[] = {
    DEFINE_PROP_STRING("socket_path", CnuasVnicState, socket_path),
    DEFINE_PROP_MACADDR("mac", CnuasVnicState, mac),
    DEFINE_PROP_PCIE_LINK_SPEED("x-speed", CnuasVnicState, link_speed,
                                PCIE_LINK_SPEED_8),
    DEFINE_PROP_PCIE_LINK_WIDTH("x-width", CnuasVnicState, link_width,
                                PCIE_LINK_WIDTH_16),
    DEFINE_PROP_END_OF_LIST(),
};

static void vnic_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = vnic_realize;
    k->exit = vnic_exit;
    k->config_write = vnic_write_config;
    k->vendor_id = CNUAS_VNIC_VENDOR_ID;
    k->device_id = CNUAS_VNIC_DEVICE_ID;
    k->revision = CNUAS_VNIC_REVISION;
    k->class_id = PCI_CLASS_NETWORK_OTHER;    /* datasheet: Network, other */
    dc->desc = "Cnuas virtual NIC (SOCK_SEQPACKET wire)";
    dc->reset = vnic_reset;
    dc->vmsd = &vmstate_vnic;
    device_class_set_props(dc, vnic_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo vnic_info = {
    .name = TYPE_CNUAS_VNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(CnuasVnicState),
    .class_init = vnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { },
    },
};

static void vnic_register_types(void)
{
    type_register_static(&vnic_info);
}

type_init(vnic_register_types)
