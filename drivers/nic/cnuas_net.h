/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * cnuas_net: the interface an RDMA consumer (cnuas_ib) uses to run on the
 * PCI function cnuas_net owns.  This mirrors mlx5_core + mlx5_ib.
 *
 * FINDING THE DEVICE: the auxiliary bus
 *   For every probed cnuas-vnic, cnuas_net registers one auxiliary device
 *   named "cnuas_net.rdma.<n>" (CNUAS_NET_ADEV_MATCH in an
 *   auxiliary_device_id table) whose container is struct cnuas_net_adev.
 *   cnuas_ib registers an auxiliary_driver; its probe() gets the device,
 *   to_cnuas_net_adev() gives the handle, the net_device and the pci_dev.
 *   Ordering is handled by the bus, whichever module loads or unloads first:
 *     - cnuas_ib loaded first: it binds when cnuas_net probes a device;
 *     - rmmod cnuas_net (or PCI unbind) while cnuas_ib is bound: cnuas_ib's
 *       remove() runs first, before the netdev and the PCI resources go;
 *     - rmmod cnuas_ib: its remove() runs; cnuas_net keeps working.
 *   cnuas_ib also links against the functions below, so modprobe loads
 *   cnuas_net first and the module refcount keeps the code present.
 *
 * CONSUMER LIFETIME
 *   In remove() cnuas_ib must call cnuas_net_unregister_rdma() before it
 *   returns; the handle and the net_device are valid from probe() until
 *   then.  The hardware is live from PCI probe to PCI remove: frames flow to
 *   and from a registered consumer whether the net_device is up or down
 *   (administrative state only gates the normal stack).
 *
 * LINK LAYER
 *   cnuas_net_register_rdma() names the link layer the consumer runs:
 *     CNUAS_LL_ETH: RoCEv2.  Received frames that are Ethernet + IPv4 (not a
 *       fragment) + UDP destination port 4791, or Ethernet + IPv6 (next
 *       header UDP) + UDP port 4791, go to ops->rx; every other frame goes
 *       up the normal network stack.  No VLAN tags are parsed.
 *     CNUAS_LL_IB: native InfiniBand.  Every received frame (LRH first) goes
 *       to ops->rx; frames the stack sends through the net_device are
 *       dropped (counted as tx_drop_ib_mode).
 *   With no consumer registered every frame goes up the stack.  The
 *   ethtool private flags roce_mode / ib_mode show the registered layer.
 *
 * RECEIVE
 *   ops->rx(ctx, skb) runs in NAPI (softirq) context and must not sleep.  It
 *   owns the skb and must free or consume it.  skb->data points at the first
 *   byte of the frame (destination MAC in ETH mode, LRH in IB mode),
 *   skb->len is the frame length, skb_mac_header(skb) == skb->data, skb->dev
 *   is the net_device; in ETH mode skb->protocol is the EtherType and the
 *   network header is set after the 14-byte Ethernet header.  The frame has
 *   passed the length checks (ETH: 14..MTU+18 bytes; IB: 1..9216 bytes,
 *   a runt included); nothing else is validated - lengths in IB mode,
 *   checksums, ICRC, addresses are the consumer's business.
 *
 * TRANSMIT
 *   cnuas_net_xmit() takes a complete frame (in ETH mode the consumer builds
 *   the Ethernet header itself; the source address is the net_device's
 *   dev_addr) and always consumes the skb.  Callable from any context
 *   (process, softirq, hard irq, with locks held).  The device has a single
 *   transmit slot: frames wait in consumer queues, one per traffic class,
 *   CNUAS_NET_RDMA_TXQ_LEN frames over all of them; each shares its class
 *   with the stack in turn, and the classes share the slot by the DCB
 *   settings (strict, ETS shares).  The class is the ETS prio-tc map of the
 *   frame's priority: its VLAN PCP, else the dcb app table's priority for
 *   its IP DSCP, else skb->priority when 0..7, else 0.  While a received
 *   PFC frame pauses that priority the frame waits; when the queues are
 *   full that is -ENOBUFS and ops->tx_wake, as for a slow slot.
 *   A frame is copied to the device buffer before the skb is freed,
 *   so skb destructors run early and the consumer never waits for a
 *   completion.  Returns 0 when queued or sent; -ENOBUFS when the queue is
 *   full (ops->tx_wake is called once it has drained to half), -EMSGSIZE
 *   for a length outside 1..CNUAS_NET_MAX_FRAME, -ENOLINK when the link is
 *   down (the frame is dropped), -ENODEV after unregister.  Frames still
 *   queued at cnuas_net_unregister_rdma() are freed there.
 *   cnuas_net_xmit_buf() copies len bytes into a new skb and does the same.
 *
 * LINK STATE
 *   cnuas_net_link_up() reads the current carrier.  ops->link_change(ctx, up)
 *   is called on every change after registration, in softirq context.  To
 *   avoid a lost update, register first, then read cnuas_net_link_up().
 *
 * Every callback runs under RCU; cnuas_net_unregister_rdma() waits for
 * running callbacks to return, and none starts afterwards.
 */
#ifndef CNUAS_NET_H
#define CNUAS_NET_H

#include <linux/auxiliary_bus.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/skbuff.h>
#include <linux/types.h>

#define CNUAS_NET_DRV_NAME	"cnuas_net"
#define CNUAS_NET_DRV_VERSION	"0.1.0"

/* Auxiliary device name; the match string is "<module>.<name>". */
#define CNUAS_NET_ADEV_NAME	"rdma"
#define CNUAS_NET_ADEV_MATCH	CNUAS_NET_DRV_NAME "." CNUAS_NET_ADEV_NAME

/* Largest frame the device moves, and the net_device MTU that fills it. */
#define CNUAS_NET_MAX_FRAME	9216
#define CNUAS_NET_MAX_MTU	9202

/* UDP destination port that marks a RoCEv2 frame. */
#define CNUAS_NET_ROCE_UDP_PORT	4791

/* Consumer frames that may wait for the transmit slot. */
#define CNUAS_NET_RDMA_TXQ_LEN	512

/** enum cnuas_link_layer - what a consumer runs on the port */
enum cnuas_link_layer {
	CNUAS_LL_NONE = 0,	/* no consumer: every frame goes up the stack */
	CNUAS_LL_ETH,		/* RoCEv2 frames go to the consumer */
	CNUAS_LL_IB,		/* every frame goes to the consumer */
};

/* Opaque per-device handle. */
struct cnuas_net;

/**
 * struct cnuas_net_adev - the auxiliary device for one cnuas-vnic function
 * @adev: the auxiliary device (bus device name "cnuas_net.rdma.<n>")
 * @net: handle for the functions below
 * @netdev: the Ethernet net_device of the function
 * @pdev: the PCI function (for DMA mappings and the IB device's parent)
 */
struct cnuas_net_adev {
	struct auxiliary_device adev;
	struct cnuas_net *net;
	struct net_device *netdev;
	struct pci_dev *pdev;
};

static inline struct cnuas_net_adev *
to_cnuas_net_adev(struct auxiliary_device *adev)
{
	return container_of(adev, struct cnuas_net_adev, adev);
}

/**
 * struct cnuas_net_rdma_ops - callbacks of the registered consumer
 * @rx: a frame for the consumer (see RECEIVE above); required
 * @link_change: the carrier changed; optional
 * @tx_wake: the consumer queue has room again after -ENOBUFS; optional
 */
struct cnuas_net_rdma_ops {
	void (*rx)(void *ctx, struct sk_buff *skb);
	void (*link_change)(void *ctx, bool up);
	void (*tx_wake)(void *ctx);
};

/*
 * Register the consumer of @net.  Returns 0, -EBUSY when one is already
 * registered, -EINVAL for a bad layer or a missing ops->rx.  Process
 * context.
 */
int cnuas_net_register_rdma(struct cnuas_net *net,
			    const struct cnuas_net_rdma_ops *ops, void *ctx,
			    enum cnuas_link_layer layer);

/*
 * Unregister; waits for running callbacks, frees queued frames, and returns
 * the port to CNUAS_LL_NONE.  Process context; may sleep.
 */
void cnuas_net_unregister_rdma(struct cnuas_net *net);

/* Send one frame; consumes @skb in every case.  See TRANSMIT above. */
int cnuas_net_xmit(struct cnuas_net *net, struct sk_buff *skb);

/* Send @len bytes from @buf (copied; GFP_ATOMIC).  See TRANSMIT above. */
int cnuas_net_xmit_buf(struct cnuas_net *net, const void *buf,
		       unsigned int len);

/* Current carrier (LINK_STATUS bit 0 as last seen by the driver). */
bool cnuas_net_link_up(struct cnuas_net *net);

/* The link layer currently registered (CNUAS_LL_NONE when none). */
enum cnuas_link_layer cnuas_net_link_layer(struct cnuas_net *net);

/**
 * struct cnuas_net_rdma_counters - the consumer's frames on the wire
 * @rx_packets, @rx_bytes: frames handed to ops->rx, and their bytes
 * @tx_packets, @tx_bytes: frames of cnuas_net_xmit() the device sent
 */
struct cnuas_net_rdma_counters {
	u64 rx_packets;
	u64 rx_bytes;
	u64 tx_packets;
	u64 tx_bytes;
};

/* What the RDMA consumer's frames add up to since the device probed. */
void cnuas_net_rdma_counters(struct cnuas_net *net,
			     struct cnuas_net_rdma_counters *c);

#endif /* CNUAS_NET_H */
