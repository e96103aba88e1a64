// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_net IEEE DCB (802.1Qaz ETS, 802.1Qbb PFC) through dcbnl, so
 * iproute2's `dcb` tool and lldpad can read and set it.
 *
 * The device has one queue and no scheduler, and its socket back-pressures
 * instead of dropping, so the configuration is kept and reported, not
 * enforced.  PFC frames received are counted per priority (ethtool -S
 * rx_prioN_pause, dcb pfc "indications"); the driver never sends any
 * ("requests" stay 0).  All callbacks run under RTNL.
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
		pfc->requests[i] = tx[CNUAS_TX_PRIO0_PAUSE + i];
		pfc->indications[i] = rx[CNUAS_RX_PRIO0_PAUSE + i];
	}
	return 0;
}

static int cnuas_ieee_setpfc(struct net_device *dev, struct ieee_pfc *pfc)
{
	struct cnuas_net *net = netdev_priv(dev);

	net->pfc.pfc_en = pfc->pfc_en;
	net->pfc.mbc = pfc->mbc;
	net->pfc.delay = pfc->delay;
	return 0;
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
	.getdcbx	= cnuas_getdcbx,
	.setdcbx	= cnuas_setdcbx,
};
