// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net ethtool operations: identity, link, counters, private flags.
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/pci.h>

#include "cnuas_net_priv.h"

/* Names of the rx, tx and misc counters, in enum order (cnuas_net_priv.h). */
static const char * const cnuas_rx_stat_names[CNUAS_RX_PFC_PRIO0] = {
	[CNUAS_RX_PACKETS]		= "rx_packets",
	[CNUAS_RX_BYTES]		= "rx_bytes",
	[CNUAS_RX_RDMA_PACKETS]		= "rx_rdma_packets",
	[CNUAS_RX_RDMA_BYTES]		= "rx_rdma_bytes",
	[CNUAS_RX_DROP_RUNT]		= "rx_drop_runt",
	[CNUAS_RX_DROP_OVERSIZE]	= "rx_drop_oversize",
	[CNUAS_RX_DROP_BAD_LEN]		= "rx_drop_bad_len",
	[CNUAS_RX_DROP_BAD_SRC]		= "rx_drop_bad_src",
	[CNUAS_RX_DROP_BAD_MAC_CTRL]	= "rx_drop_bad_mac_ctrl",
	[CNUAS_RX_DROP_NOMEM]		= "rx_drop_nomem",
	[CNUAS_RX_DROP_DOWN]		= "rx_drop_down",
	[CNUAS_RX_PAUSE]		= "rx_pause",
};

static const char * const cnuas_tx_stat_names[CNUAS_TX_PFC_PRIO0] = {
	[CNUAS_TX_PACKETS]		= "tx_packets",
	[CNUAS_TX_BYTES]		= "tx_bytes",
	[CNUAS_TX_RDMA_PACKETS]		= "tx_rdma_packets",
	[CNUAS_TX_RDMA_BYTES]		= "tx_rdma_bytes",
	[CNUAS_TX_DROP_LINK_DOWN]	= "tx_drop_link_down",
	[CNUAS_TX_DROP_OVERSIZE]	= "tx_drop_oversize",
	[CNUAS_TX_DROP_IB_MODE]		= "tx_drop_ib_mode",
	[CNUAS_TX_DROP_RDMA_FULL]	= "tx_drop_rdma_full",
	[CNUAS_TX_TIMEOUTS]		= "tx_timeouts",
};

static const char * const cnuas_misc_stat_names[CNUAS_MISC_STAT_COUNT] = {
	[CNUAS_LINK_CHANGES]		= "link_changes",
};

/* Private flags: read-only mirrors of the link layer cnuas_ib registered. */
enum {
	CNUAS_PFLAG_ROCE_MODE = BIT(0),
	CNUAS_PFLAG_IB_MODE = BIT(1),
};

static const char * const cnuas_priv_flag_names[] = {
	"roce_mode",
	"ib_mode",
};

static void cnuas_get_drvinfo(struct net_device *dev,
			      struct ethtool_drvinfo *info)
{
	struct cnuas_net *net = netdev_priv(dev);

	strscpy(info->driver, CNUAS_NET_DRV_NAME, sizeof(info->driver));
	strscpy(info->version, CNUAS_NET_DRV_VERSION, sizeof(info->version));
	strscpy(info->bus_info, pci_name(net->pdev), sizeof(info->bus_info));
}

/*
 * The emulated port is nominally 100G full duplex; the speed is reported
 * whether or not the socket is connected (get_link says that).
 */
static int cnuas_get_link_ksettings(struct net_device *dev,
				    struct ethtool_link_ksettings *cmd)
{
	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	cmd->base.speed = CNUAS_NET_SPEED_MBPS;
	cmd->base.duplex = DUPLEX_FULL;
	cmd->base.port = PORT_OTHER;
	cmd->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static int cnuas_get_sset_count(struct net_device *dev, int sset)
{
	switch (sset) {
	case ETH_SS_STATS:
		return CNUAS_STAT_COUNT;
	case ETH_SS_PRIV_FLAGS:
		return ARRAY_SIZE(cnuas_priv_flag_names);
	default:
		return -EOPNOTSUPP;
	}
}

static void cnuas_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	unsigned int i;

	switch (sset) {
	case ETH_SS_STATS:
		for (i = 0; i < ARRAY_SIZE(cnuas_rx_stat_names); i++)
			ethtool_puts(&data, cnuas_rx_stat_names[i]);
		for (i = 0; i < CNUAS_NUM_PRIO; i++)
			ethtool_sprintf(&data, "rx_pfc_prio%u", i);
		for (i = 0; i < ARRAY_SIZE(cnuas_tx_stat_names); i++)
			ethtool_puts(&data, cnuas_tx_stat_names[i]);
		for (i = 0; i < CNUAS_NUM_PRIO; i++)
			ethtool_sprintf(&data, "tx_pfc_prio%u", i);
		for (i = 0; i < CNUAS_NUM_PRIO; i++)
			ethtool_sprintf(&data, "rx_pfc_prio%u_pause_usec", i);
		for (i = 0; i < CNUAS_NUM_TC; i++)
			ethtool_sprintf(&data, "tx_tc%u_packets", i);
		for (i = 0; i < CNUAS_NUM_TC; i++)
			ethtool_sprintf(&data, "tx_tc%u_bytes", i);
		for (i = 0; i < ARRAY_SIZE(cnuas_misc_stat_names); i++)
			ethtool_puts(&data, cnuas_misc_stat_names[i]);
		break;
	case ETH_SS_PRIV_FLAGS:
		for (i = 0; i < ARRAY_SIZE(cnuas_priv_flag_names); i++)
			ethtool_puts(&data, cnuas_priv_flag_names[i]);
		break;
	}
}

static void cnuas_get_ethtool_stats(struct net_device *dev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct cnuas_net *net = netdev_priv(dev);

	/* The three groups are laid out back to back, as in get_strings. */
	cnuas_net_read_stats(net, data, data + CNUAS_RX_STAT_COUNT,
			     data + CNUAS_RX_STAT_COUNT + CNUAS_TX_STAT_COUNT);
}

static u32 cnuas_get_priv_flags(struct net_device *dev)
{
	struct cnuas_net *net = netdev_priv(dev);

	switch (READ_ONCE(net->layer)) {
	case CNUAS_LL_ETH:
		return CNUAS_PFLAG_ROCE_MODE;
	case CNUAS_LL_IB:
		return CNUAS_PFLAG_IB_MODE;
	default:
		return 0;
	}
}

/*
 * The link layer is cnuas_ib's module parameter; the flags only show it.
 * Writing the current value succeeds, anything else is refused.
 */
static int cnuas_set_priv_flags(struct net_device *dev, u32 flags)
{
	if (flags == cnuas_get_priv_flags(dev))
		return 0;
	netdev_info(dev, "roce_mode/ib_mode follow the link_layer parameter of cnuas_ib; reload it to change\n");
	return -EOPNOTSUPP;
}

static u32 cnuas_get_msglevel(struct net_device *dev)
{
	struct cnuas_net *net = netdev_priv(dev);

	return net->msg_enable;
}

static void cnuas_set_msglevel(struct net_device *dev, u32 level)
{
	struct cnuas_net *net = netdev_priv(dev);

	net->msg_enable = level;
}

const struct ethtool_ops cnuas_ethtool_ops = {
	.get_drvinfo		= cnuas_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= cnuas_get_link_ksettings,
	.get_sset_count		= cnuas_get_sset_count,
	.get_strings		= cnuas_get_strings,
	.get_ethtool_stats	= cnuas_get_ethtool_stats,
	.get_priv_flags		= cnuas_get_priv_flags,
	.set_priv_flags		= cnuas_set_priv_flags,
	.get_msglevel		= cnuas_get_msglevel,
	.set_msglevel		= cnuas_set_msglevel,
};
