/*
 * cnuasgpu: an accelerator-shaped PCI function for the Cnuas HIL.
 *
 * It executes no kernels. It has what the software above an accelerator
 * needs: an identification block, a large RAM-backed device-memory BAR,
 * interrupts (one MSI vector, INTx pin A) and a peer link, CnuasLink, whose
 * "wire" is an AF_UNIX SOCK_SEQPACKET socket to the cnuas-switch daemon (one
 * datagram is one frame).  The register map and every behaviour below are
 * the contract of docs/devices.md ("cnuasgpu"); harness/models/gpu.ts is the
 * independent reference model the qtest oracle runs side by side with this
 * file.
 *
 * Where the original design left a choice open, this device follows the
 * decision docs/devices.md records (marked "decided here").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msi.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "cnuas_pci.h"
#include "cnuas_sock.h"

#define TYPE_CNUAS_GPU "cnuasgpu"
OBJECT_DECLARE_SIMPLE_TYPE(CnuasGpuState, CNUAS_GPU)

#define CNUAS_GPU_VENDOR_ID      0x1af4
#define CNUAS_GPU_DEVICE_ID      0x10f1
#define CNUAS_GPU_REVISION       0x01
#define CNUAS_GPU_FW_VERSION     0x00010000      /* 0.1.0 */

#define CNUAS_GPU_REGS_SIZE      (64 * KiB)
#define CNUAS_GPU_LINK_MTU       65536u
#define CNUAS_GPU_DEVMEM_MIN     (4 * KiB)
#define CNUAS_GPU_DEVMEM_MAX     (1 * TiB)

/* A connection that lived this long resets the reconnect delay. */
#define CNUAS_GPU_LINK_STABLE_NS    (2000 * SCALE_MS)
/* Longest a transmit waits for socket room before the link is dropped. */
#define CNUAS_GPU_SEND_TIMEOUT_MS   1000

/* BAR0 register offsets (docs/devices.md, cnuasgpu). */
enum {
    REG_VENDOR_ID          = 0x000,
    REG_DEVICE_ID          = 0x004,
    REG_REVISION           = 0x008,
    REG_FW_VERSION         = 0x00c,
    REG_GPU_ID             = 0x010,
    REG_SM_COUNT           = 0x014,
    REG_LANES_PER_SM       = 0x018,
    REG_TENSOR_SIZE        = 0x01c,
    REG_DEVMEM_SIZE_LO     = 0x020,
    REG_DEVMEM_SIZE_HI     = 0x024,

    REG_IRQ_STATUS         = 0x100,
    REG_IRQ_MASK           = 0x104,

    REG_LINK_STATUS        = 0x200,
    REG_LINK_TX_OFFSET_LO  = 0x204,
    REG_LINK_TX_OFFSET_HI  = 0x208,
    REG_LINK_TX_LEN        = 0x20c,
    REG_LINK_TX_DOORBELL   = 0x210,
    REG_LINK_RX_OFFSET_LO  = 0x214,
    REG_LINK_RX_OFFSET_HI  = 0x218,
    REG_LINK_RX_BUF_SIZE   = 0x21c,
    REG_LINK_RX_LEN        = 0x220,
    REG_LINK_RX_CONSUME    = 0x224,
};

/* IRQ_STATUS / IRQ_MASK causes. */
#define IRQ_LINK_TX_DONE        (1u << 0)
#define IRQ_LINK_RX_READY       (1u << 1)
#define IRQ_ALL                 (IRQ_LINK_TX_DONE | IRQ_LINK_RX_READY)

/* LINK_STATUS bits. */
#define LINK_STATUS_UP          (1u << 0)
#define LINK_STATUS_RX_READY    (1u << 1)

struct CnuasGpuState {
    PCIDevice pdev;
    MemoryRegion regs;
    MemoryRegion devmem;

    /* Properties. */
    uint32_t gpu_id;
    uint32_t sm_count;
    uint32_t lanes_per_sm;
    uint32_t tensor_size;
    uint64_t devmem_size;
    char *link_path;
    char *link_speed;
    uint8_t link_width;

    /* Registers. */
    uint32_t irq_status;
    uint32_t irq_mask;
    uint32_t tx_offset_lo;
    uint32_t tx_offset_hi;
    uint32_t tx_len;
    uint32_t rx_offset_lo;
    uint32_t rx_offset_hi;
    uint32_t rx_buf_size;
    uint32_t rx_len;
    bool rx_ready;

    /* IRQ_STATUS & IRQ_MASK as last signalled, for MSI edge detection. */
    uint32_t irq_asserted;

    /* "cnuasgpu <gpu_id>", the prefix of its log lines */
    char *name;

    /* CnuasLink: the socket to the switch, down while no connection. */
    CnuasSock link;
    uint8_t *rx_scratch;
};

static uint8_t *gpu_devmem_ptr(CnuasGpuState *s)
{
    return memory_region_get_ram_ptr(&s->devmem);
}

/* True when [offset, offset + len) lies inside BAR1, without overflowing. */
static bool gpu_devmem_range_ok(CnuasGpuState *s, uint64_t offset,
                                uint64_t len)
{
    return offset <= s->devmem_size && len <= s->devmem_size - offset;
}

static void gpu_update_irq(CnuasGpuState *s)
{
    cnuas_pci_update_irq(&s->pdev, s->irq_status & s->irq_mask,
                         &s->irq_asserted);
}

static void gpu_raise(CnuasGpuState *s, uint32_t cause)
{
    s->irq_status |= cause;
    gpu_update_irq(s);
}

/* ---- CnuasLink socket ---------------------------------------------------- */

static void gpu_link_watch(CnuasGpuState *s)
{
    /* Back-pressure: while a frame waits in BAR1 the socket is not read. */
    cnuas_sock_set_reading(&s->link, !s->rx_ready);
}

/* Send one datagram; false when the link had to be torn down. */
static bool gpu_link_send(CnuasGpuState *s, const uint8_t *buf, size_t len)
{
    /* A peer that stays full for the whole wait counts as gone. */
    if (cnuas_sock_send(&s->link, buf, len, CNUAS_GPU_SEND_TIMEOUT_MS) ==
        CNUAS_SOCK_SENT) {
        return true;
    }
    cnuas_sock_drop(&s->link);
    return false;
}

/* Land one received datagram of @len bytes (in rx_scratch) or drop it. */
static void gpu_link_deliver(CnuasGpuState *s, size_t len)
{
    uint64_t offset = ((uint64_t)s->rx_offset_hi << 32) | s->rx_offset_lo;

    if (len > CNUAS_GPU_LINK_MTU) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: received frame of %zu bytes exceeds the "
                      "%u-byte CnuasLink maximum, dropped\n",
                      s->gpu_id, len, CNUAS_GPU_LINK_MTU);
        return;
    }
    if (s->rx_buf_size == 0) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: frame of %zu bytes arrived with receive "
                      "not armed (LINK_RX_BUF_SIZE 0), dropped\n",
                      s->gpu_id, len);
        return;
    }
    if (len > s->rx_buf_size) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: frame of %zu bytes is larger than the "
                      "armed %u-byte buffer, dropped\n",
                      s->gpu_id, len, s->rx_buf_size);
        return;
    }
    if (!gpu_devmem_range_ok(s, offset, s->rx_buf_size)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: armed receive buffer 0x%" PRIx64
                      "+0x%x lies outside device memory (0x%" PRIx64
                      " bytes), frame dropped\n",
                      s->gpu_id, offset, s->rx_buf_size, s->devmem_size);
        return;
    }
    memcpy(gpu_devmem_ptr(s) + offset, s->rx_scratch, len);
    memory_region_set_dirty(&s->devmem, offset, len);
    s->rx_len = len;
    s->rx_ready = true;
    gpu_raise(s, IRQ_LINK_RX_READY);
}

/*
 * Read datagrams until one waits for the guest, the socket is empty, or the
 * link is gone.
 */
static void gpu_link_poll(CnuasGpuState *s)
{
    while (cnuas_sock_is_up(&s->link) && !s->rx_ready) {
        ssize_t n = cnuas_sock_recv(&s->link, s->rx_scratch,
                                    CNUAS_GPU_LINK_MTU);

        if (n == CNUAS_SOCK_AGAIN) {
            break;
        }
        if (n == CNUAS_SOCK_GONE) {
            cnuas_sock_drop(&s->link);
            break;
        }
        if (n == 0) {
            continue; /* an empty datagram, logged */
        }
        gpu_link_deliver(s, n);
    }
    gpu_link_watch(s);
}

static void gpu_link_readable(void *opaque)
{
    gpu_link_poll(opaque);
}

static void gpu_link_reconnected(void *opaque)
{
    gpu_link_watch(opaque);
}

/*
 * A connection that ends before it lived 2 s (a switch that accepts and
 * closes at once because the port is down) counts as a failed attempt, so a
 * refused device stays down instead of flapping.
 */
static const CnuasSockOps gpu_link_ops = {
    .readable = gpu_link_readable,
    .reconnected = gpu_link_reconnected,
    .stable_ns = CNUAS_GPU_LINK_STABLE_NS,
};

static void gpu_link_doorbell(CnuasGpuState *s)
{
    uint64_t offset = ((uint64_t)s->tx_offset_hi << 32) | s->tx_offset_lo;

    if (!cnuas_sock_is_up(&s->link)) {
        return;
    }
    if (s->tx_len == 0 || s->tx_len > CNUAS_GPU_LINK_MTU) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: LINK_TX_LEN %u outside 1..%u, nothing "
                      "sent\n", s->gpu_id, s->tx_len, CNUAS_GPU_LINK_MTU);
        return;
    }
    if (!gpu_devmem_range_ok(s, offset, s->tx_len)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: transmit range 0x%" PRIx64 "+0x%x lies "
                      "outside device memory (0x%" PRIx64 " bytes), nothing "
                      "sent\n", s->gpu_id, offset, s->tx_len, s->devmem_size);
        return;
    }
    if (gpu_link_send(s, gpu_devmem_ptr(s) + offset, s->tx_len)) {
        gpu_raise(s, IRQ_LINK_TX_DONE);
    }
}

/* ---- BAR0 registers ------------------------------------------------------ */

static uint64_t gpu_read(void *opaque, hwaddr addr, unsigned size)
{
    CnuasGpuState *s = opaque;

    if (!cnuas_pci_access_ok(s->name, addr, size, false)) {
        return 0;
    }

    switch (addr) {
    case REG_VENDOR_ID:
        return CNUAS_GPU_VENDOR_ID;
    case REG_DEVICE_ID:
        return CNUAS_GPU_DEVICE_ID;
    case REG_REVISION:
        return CNUAS_GPU_REVISION;
    case REG_FW_VERSION:
        return CNUAS_GPU_FW_VERSION;
    case REG_GPU_ID:
        return s->gpu_id;
    case REG_SM_COUNT:
        return s->sm_count;
    case REG_LANES_PER_SM:
        return s->lanes_per_sm;
    case REG_TENSOR_SIZE:
        return s->tensor_size;
    case REG_DEVMEM_SIZE_LO:
        return (uint32_t)s->devmem_size;
    case REG_DEVMEM_SIZE_HI:
        return s->devmem_size >> 32;
    case REG_IRQ_STATUS:
        return s->irq_status;
    case REG_IRQ_MASK:
        return s->irq_mask;
    case REG_LINK_STATUS:
        return (cnuas_sock_is_up(&s->link) ? LINK_STATUS_UP : 0) |
               (s->rx_ready ? LINK_STATUS_RX_READY : 0);
    case REG_LINK_TX_OFFSET_LO:
        return s->tx_offset_lo;
    case REG_LINK_TX_OFFSET_HI:
        return s->tx_offset_hi;
    case REG_LINK_TX_LEN:
        return s->tx_len;
    case REG_LINK_RX_OFFSET_LO:
        return s->rx_offset_lo;
    case REG_LINK_RX_OFFSET_HI:
        return s->rx_offset_hi;
    case REG_LINK_RX_BUF_SIZE:
        return s->rx_buf_size;
    case REG_LINK_RX_LEN:
        return s->rx_len;
    case REG_LINK_TX_DOORBELL:
    case REG_LINK_RX_CONSUME:
        return 0;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: read of unknown register 0x%" HWADDR_PRIx
                      "\n", s->gpu_id, addr);
        return 0;
    }
}

static void gpu_write(void *opaque, hwaddr addr, uint64_t val,
                      unsigned size)
{
    CnuasGpuState *s = opaque;

    if (!cnuas_pci_access_ok(s->name, addr, size, true)) {
        return;
    }

    switch (addr) {
    case REG_IRQ_STATUS:
        s->irq_status &= ~val;
        gpu_update_irq(s);
        break;
    case REG_IRQ_MASK:
        s->irq_mask = val & IRQ_ALL;
        gpu_update_irq(s);
        break;
    case REG_LINK_TX_OFFSET_LO:
        s->tx_offset_lo = val;
        break;
    case REG_LINK_TX_OFFSET_HI:
        s->tx_offset_hi = val;
        break;
    case REG_LINK_TX_LEN:
        s->tx_len = val;
        break;
    case REG_LINK_TX_DOORBELL:
        if (val) {
            gpu_link_doorbell(s);
        }
        break;
    case REG_LINK_RX_OFFSET_LO:
        s->rx_offset_lo = val;
        break;
    case REG_LINK_RX_OFFSET_HI:
        s->rx_offset_hi = val;
        break;
    case REG_LINK_RX_BUF_SIZE:
        s->rx_buf_size = val;
        break;
    case REG_LINK_RX_CONSUME:
        if (val && s->rx_ready) {
            s->rx_ready = false;
            gpu_link_poll(s);
        }
        break;
    case REG_VENDOR_ID:
    case REG_DEVICE_ID:
    case REG_REVISION:
    case REG_FW_VERSION:
    case REG_GPU_ID:
    case REG_SM_COUNT:
    case REG_LANES_PER_SM:
    case REG_TENSOR_SIZE:
    case REG_DEVMEM_SIZE_LO:
    case REG_DEVMEM_SIZE_HI:
    case REG_LINK_STATUS:
    case REG_LINK_RX_LEN:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: write of 0x%" PRIx64 " to read-only "
                      "register 0x%" HWADDR_PRIx " ignored\n",
                      s->gpu_id, val, addr);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "cnuasgpu %u: write of 0x%" PRIx64 " to unknown "
                      "register 0x%" HWADDR_PRIx " ignored\n",
                      s->gpu_id, val, addr);
        break;
    }
}

static const MemoryRegionOps gpu_regs_ops = {
    .read = gpu_read,
    .write = gpu_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = CNUAS_PCI_REGS_VALID,
    .impl = CNUAS_PCI_REGS_VALID,
};

/* ---- PCI glue ------------------------------------------------------------ */

static void gpu_config_write(PCIDevice *pdev, uint32_t addr,
                             uint32_t val, int len)
{
    CnuasGpuState *s = CNUAS_GPU(pdev);

    pci_default_write_config(pdev, addr, val, len);
    cnuas_pci_config_written(pdev, s->irq_asserted);
}

/* Map an x-speed name to the PCIe "Max Link Speed" encoding. */
static int gpu_speed_code(const char *name)
{
    static const char *const names[] = { "2_5", "5", "8", "16", "32", "64" };
    int i;

    for (i = 0; i < ARRAY_SIZE(names); i++) {
        if (!strcmp(name, names[i])) {
            return i + 1;
        }
    }
    return -1;
}

static bool gpu_width_ok(uint8_t width)
{
    switch (width) {
    case 1: case 2: case 4: case 8: case 12: case 16: case 32:
        return true;
    default:
        return false;
    }
}

static void gpu_realize(PCIDevice *pdev, Error **errp)
{
    CnuasGpuState *s = CNUAS_GPU(pdev);
    const char *speed_name = s->link_speed ? s->link_speed : "32";
    int speed = gpu_speed_code(speed_name);
    Error *err = NULL;

    if (!cnuas_sock_path_ok(s->link_path, "cnuasgpu: cnuaslink_socket",
                            errp)) {
        return;
    }
    if (s->devmem_size < CNUAS_GPU_DEVMEM_MIN ||
        s->devmem_size > CNUAS_GPU_DEVMEM_MAX ||
        !is_power_of_2(s->devmem_size)) {
        error_setg(errp, "cnuasgpu: devmem_size 0x%" PRIx64 " must be a "
                   "power of two between 4 KiB and 1 TiB", s->devmem_size);
        return;
    }
    if (speed < 0) {
        error_setg(errp, "cnuasgpu: x-speed '%s' is not one of 2_5, 5, 8, "
                   "16, 32, 64 (GT/s)", speed_name);
        return;
    }
    if (!gpu_width_ok(s->link_width)) {
        error_setg(errp, "cnuasgpu: x-width %u is not one of 1, 2, 4, 8, "
                   "12, 16, 32", s->link_width);
        return;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    if (msi_init(pdev, 0, 1, true, false, &err) == -ENOTSUP) {
        /* An interrupt controller without MSI: INTx alone still works. */
        error_free(err);
        err = NULL;
    } else if (err) {
        error_propagate(errp, err);
        return;
    }

    if (pci_bus_is_express(pci_get_bus(pdev))) {
        if (pcie_endpoint_cap_init(pdev, 0) < 0) {
            error_setg(errp, "cnuasgpu: cannot add the PCI Express "
                       "capability");
            msi_uninit(pdev);
            return;
        }
        cnuas_pci_fill_link(pdev, s->link_width, speed);
    } else {
        /* Conventional bus: plain PCI config space, no link to describe. */
        pdev->cap_present &= ~QEMU_PCI_CAP_EXPRESS;
    }

    memory_region_init_io(&s->regs, OBJECT(s), &gpu_regs_ops, s,
                          "cnuasgpu-regs", CNUAS_GPU_REGS_SIZE);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->regs);

    memory_region_init_ram(&s->devmem, OBJECT(s), "cnuasgpu-devmem",
                           s->devmem_size, &err);
    if (err) {
        error_propagate(errp, err);
        if (pci_is_express(pdev)) {
            pcie_cap_exit(pdev);
        }
        msi_uninit(pdev);
        return;
    }
    pci_register_bar(pdev, 1,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->devmem);

    s->rx_scratch = g_malloc(CNUAS_GPU_LINK_MTU);
    s->name = g_strdup_printf("cnuasgpu %u", s->gpu_id);
    cnuas_sock_init(&s->link, &gpu_link_ops, s, s->link_path, s->name);
    gpu_link_watch(s);
}

static void gpu_exit(PCIDevice *pdev)
{
    CnuasGpuState *s = CNUAS_GPU(pdev);

    cnuas_sock_cleanup(&s->link);
    g_free(s->rx_scratch);
    s->rx_scratch = NULL;
    g_free(s->name);
    s->name = NULL;
    if (pci_is_express(pdev)) {
        pcie_cap_exit(pdev);
    }
    msi_uninit(pdev);
}

static void gpu_reset(DeviceState *dev)
{
    CnuasGpuState *s = CNUAS_GPU(dev);

    s->irq_status = 0;
    s->irq_mask = 0;
    s->tx_offset_lo = 0;
    s->tx_offset_hi = 0;
    s->tx_len = 0;
    s->rx_offset_lo = 0;
    s->rx_offset_hi = 0;
    s->rx_buf_size = 0;
    s->rx_len = 0;
    s->rx_ready = false;
    s->irq_asserted = 0;
    pci_set_irq(&s->pdev, 0);
    /* The link survives a reset; reading resumes if it was back-pressured. */
    gpu_link_watch(s);
}

static void gpu_instance_init(Object *obj)
{
    CnuasGpuState *s = CNUAS_GPU(obj);

    s->link.fd = -1;
    /*
     * Start as a PCI Express function so config space is sized for the
     * extended capability area; realize drops this on a conventional bus.
     */
    s->pdev.cap_present |= QEMU_PCI_CAP_EXPRESS;
}

static Property gpu_properties[] = {
    DEFINE_PROP_UINT32("gpu_id", CnuasGpuState, gpu_id, 0),
    DEFINE_PROP_UINT32("sm_count", CnuasGpuState, sm_count, 16),
    DEFINE_PROP_UINT32("lanes_per_sm", CnuasGpuState, lanes_per_sm, 32),
    DEFINE_PROP_UINT32("tensor_size", CnuasGpuState, tensor_size, 16),
    DEFINE_PROP_SIZE("devmem_size", CnuasGpuState, devmem_size, 256 * MiB),
    DEFINE_PROP_STRING("cnuaslink_socket", CnuasGpuState, link_path),
    DEFINE_PROP_STRING("x-speed", CnuasGpuState, link_speed),
    DEFINE_PROP_UINT8("x-width", CnuasGpuState, link_width, 16),
    DEFINE_PROP_END_OF_LIST(),
};

/*
 * Saved state (docs/devices.md, "gpu: saved state"): registers, PCI state
 * and BAR1 (a RAM region, saved with the guest's RAM) travel; the CnuasLink
 * connection does not. The restored device connects to its own
 * cnuaslink_socket at realize, held until the loaded VM runs (cnuas_sock.h),
 * so every frame queued meanwhile meets the registers the guest had; then
 * gpu_link_reconnected() turns reading on, as after a switch restart.
 */
static const VMStateDescription gpu_vmstate = {
    .name = TYPE_CNUAS_GPU,
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(pdev, CnuasGpuState),
        VMSTATE_UINT32(irq_status, CnuasGpuState),
        VMSTATE_UINT32(irq_mask, CnuasGpuState),
        VMSTATE_UINT32(tx_offset_lo, CnuasGpuState),
        VMSTATE_UINT32(tx_offset_hi, CnuasGpuState),
        VMSTATE_UINT32(tx_len, CnuasGpuState),
        VMSTATE_UINT32(rx_offset_lo, CnuasGpuState),
        VMSTATE_UINT32(rx_offset_hi, CnuasGpuState),
        VMSTATE_UINT32(rx_buf_size, CnuasGpuState),
        VMSTATE_UINT32(rx_len, CnuasGpuState),
        VMSTATE_BOOL(rx_ready, CnuasGpuState),
        VMSTATE_UINT32(irq_asserted, CnuasGpuState),
        VMSTATE_END_OF_LIST()
    },
};

static void gpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = gpu_realize;
    k->exit = gpu_exit;
    k->config_write = gpu_config_write;
    k->vendor_id = CNUAS_GPU_VENDOR_ID;
    k->device_id = CNUAS_GPU_DEVICE_ID;
    k->revision = CNUAS_GPU_REVISION;
    k->class_id = PCI_CLASS_PROCESSOR_CO;
    dc->desc = "Cnuas accelerator (device memory, CnuasLink)";
    dc->reset = gpu_reset;
    dc->vmsd = &gpu_vmstate;
    device_class_set_props(dc, gpu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo gpu_info = {
    .name = TYPE_CNUAS_GPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(CnuasGpuState),
    .instance_init = gpu_instance_init,
    .class_init = gpu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void gpu_register_types(void)
{
    type_register_static(&gpu_info);
}

type_init(gpu_register_types)
