// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net IEEE DCB (802.1Qaz ETS, 802.1Qbb PFC) through dcbnl, so
 * iproute2's `dcb` tool and lldpad can read and set it.
 *
 * The settings are what the transmit scheduler applies (cnuas_net_tx.c):
 * prio-tc picks the queue, tc-tsa strict or ETS, tc-bw the deficit round
 * robin shares, prio-pfc the priorities a received PFC frame pauses.  The
 * dcb app table's DSCP entries give untagged IP frames their priority.
 * PFC frames received are counted per priority (ethtool -S rx_pfc_prioN,
 * dcb pfc "indications"), those sent when the receive path falls behind
 * too (tx_pfc_prioN, "requests").  All callbacks run under RTNL.
 */
#include <linux/netdevice.h>
#include <net/dcbnl.h>

#include "cnuas_net_priv.h"

#define CNUAS_DCBX_MODE	(DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE)

void cnuas_dcb_init(struct cnuas_net *net)
{
	int tc;

	memset(&net->pfc, 0, sizeof(net->pfc));
	net->pfc.pfc_cap = CNUAS_NUM_PRIO;

	/* Every priority in TC 0, which has all the bandwidth. */
	memset(&net->ets, 0, sizeof(net->ets));
	net->ets.ets_cap = CNUAS_NUM_PRIO;
	for (tc = 0; tc < CNUAS_NUM_PRIO; tc++)
		net->ets.tc_tsa[tc] = IEEE_8021QAZ_TSA_ETS;
	net->ets.tc_tx_bw[0] = 100;
}

static int cnuas_ieee_getets(struct net_device *dev, struct ieee_ets *ets)
{
	struct cnuas_net *net = netdev_priv(dev);

	*ets = net->ets;
	return 0;
}

static int cnuas_ieee_setets(struct net_device *dev, struct ieee_ets *ets)
{
	struct cnuas_net *net = netdev_priv(dev);
	unsigned int sum = 0;
	bool any_ets = false;
	int i;

	for (i = 0; i < CNUAS_NUM_PRIO; i++) {
		if (ets->prio_tc[i] >= CNUAS_NUM_PRIO)
			return -EINVAL;
		if (ets->tc_tx_bw[i] > 100)
			return -EINVAL;
		switch (ets->tc_tsa[i]) {
		case IEEE_8021QAZ_TSA_ETS:
			any_ets = true;
			sum += ets->tc_tx_bw[i];
			break;
		case IEEE_8021QAZ_TSA_STRICT:
			break;
		default:
			return -EOPNOTSUPP;
		}
	}
	if (any_ets && sum != 100) {
		netdev_info(dev, "ETS bandwidths add up to %u%%, not 100%%\n",
			    sum);
		return -EINVAL;
	}
	net->ets = *ets;
	net->ets.ets_cap = CNUAS_NUM_PRIO;
	cnuas_tx_sched_update(net);
	return 0;
}

static int cnuas_ieee_getpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	struct cnuas_net *net = netdev_priv(dev);
	u64 rx[CNUAS_RX_STAT_COUNT], tx[CNUAS_TX_STAT_COUNT];
	u64 misc[CNUAS_MISC_STAT_COUNT];
	int i;

	cnuas_net_read_stats(net, rx, tx, misc);
	*pfc = net->pfc;
	for (i = 0; i < CNUAS_NUM_PRIO; i++) {
		pfc->requests[i] = tx[CNUAS_TX_PFC_PRIO0 + i];
		pfc->indications[i] = rx[CNUAS_RX_PFC_PRIO0 + i];
	}
	return 0;
}

static int cnuas_ieee_setpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	struct cnuas_net *net = netdev_priv(dev);

	net->pfc.pfc_en = pfc->pfc_en;
	net->pfc.mbc = pfc->mbc;
	net->pfc.delay = pfc->delay;
	cnuas_tx_sched_update(net);
	return 0;
}

/* Rebuild the DSCP -> priority table the transmit path reads. */
static void cnuas_dscp_map_update(struct cnuas_net *net)
{
	struct dcb_ieee_app_dscp_map map;
	int dscp;

	dcb_ieee_getapp_dscp_prio_mask_map(net->netdev, &map);
	for (dscp = 0; dscp < ARRAY_SIZE(map.map); dscp++)
		WRITE_ONCE(net->dscp_prio[dscp],
			   map.map[dscp] ? fls(map.map[dscp]) - 1 : 0xff);
}

static int cnuas_app_check(struct dcb_app *app)
{
	if (app->priority >= CNUAS_NUM_PRIO)
		return -EINVAL;
	if (app->selector == IEEE_8021QAZ_APP_SEL_DSCP && app->protocol >= 64)
		return -EINVAL;
	return 0;
}

static int cnuas_ieee_setapp(struct net_device *dev, struct dcb_app *app)
{
	struct cnuas_net *net = netdev_priv(dev);
	int err = cnuas_app_check(app);

	if (err)
		return err;
	err = dcb_ieee_setapp(dev, app);
	if (!err)
		cnuas_dscp_map_update(net);
	return err;
}

static int cnuas_ieee_delapp(struct net_device *dev, struct dcb_app *app)
{
	struct cnuas_net *net = netdev_priv(dev);
	int err = dcb_ieee_delapp(dev, app);

	if (!err)
		cnuas_dscp_map_update(net);
	return err;
}

static u8 cnuas_getdcbx(struct net_device *dev)
{
	return CNUAS_DCBX_MODE;
}

/* Only host-managed IEEE DCBX exists; dcbnl wants 0 for success. */
static u8 cnuas_setdcbx(struct net_device *dev, u8 mode)
{
	return mode == CNUAS_DCBX_MODE ? 0 : 1;
}

const struct dcbnl_rtnl_ops cnuas_dcbnl_ops = {
	.ieee_getets	= cnuas_ieee_getets,
	.ieee_setets	= cnuas_ieee_setets,
	.ieee_getpfc	= cnuas_ieee_getpfc,
	.ieee_setpfc	= cnuas_ieee_setpfc,
	.ieee_setapp	= cnuas_ieee_setapp,
	.ieee_delapp	= cnuas_ieee_delapp,
	.getdcbx	= cnuas_getdcbx,
	.setdcbx	= cnuas_setdcbx,
};
