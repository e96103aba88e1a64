// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuas_ib: RoCEv2 congestion control (docs/devices.md, "cnuas_ib
 * congestion control").  Three parts, as on a DCQCN NIC:
 *
 *  - ECN capability: RoCEv2 frames carry ECT(0) in the IP header's ECN
 *    bits (module parameter ecn, default on), so a switch above its marking
 *    threshold sets CE instead of dropping.
 *  - Notification point (NP): a received RoCEv2 packet with CE is answered
 *    with a CNP (BTH opcode 0x81, BECN set, 16 reserved bytes; IBA annex
 *    A17.9) to the QP that sent it, at most one per local QP every
 *    cnp_interval_us.
 *  - Reaction point (RP): a CNP for one of our QPs cuts its send rate
 *    DCQCN-style (Zhu et al., SIGCOMM 2015): Rt = Rc, Rc = Rc (1 - alpha/2),
 *    alpha = (1 - g) alpha + g; alpha decays every rp_alpha_period_us
 *    without a CNP; the rate recovers on a timer (rp_time_reset_us) and a
 *    byte counter (rp_byte_reset): fast recovery Rc = (Rt + Rc) / 2 for the
 *    first rp_threshold events, then additive (rp_ai_rate) and hyper
 *    (rp_hai_rate) increase of Rt.  A QP below line rate paces its request
 *    packets with a token bucket; once Rc is back at line rate the QP is
 *    unlimited again and the pacing code is not entered at all.
 *
 * A fabric that does not mark can be stood in for by tx_ce_one_in (test
 * only): the sender marks some of its own frames CE.
 *
 * The DCQCN timers are not kernel timers: a QP's state is advanced from
 * the time elapsed whenever it sends or receives a CNP.  Only the pacing
 * wait is a timer (an hrtimer that kicks the QP's engine).
 */
#include <linux/etherdevice.h>
#include <linux/hrtimer.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <net/dsfield.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>

#include "cnuas_ib.h"

/* Line rate of the port (EDR 4X) in Mb/s: an unlimited QP's rate. */
#define CNUAS_CC_LINE_RATE	100000U
/* alpha is a fraction in 1/1024 units; 1024 is 1.0. */
#define CNUAS_CC_ONE		1024U
/* Most bytes a paced QP may send at once after an idle spell. */
#define CNUAS_CC_BURST		16384
/* Most timer periods one advance replays (then the QP is idle: unlimited). */
#define CNUAS_CC_MAX_STEPS	256

static bool ecn = true;
module_param(ecn, bool, 0644);
MODULE_PARM_DESC(ecn, "RoCEv2 frames carry ECT(0) in the IP ECN bits (default 1)");

static bool dcqcn = true;
module_param(dcqcn, bool, 0644);
MODULE_PARM_DESC(dcqcn,
		 "Reaction point: CNPs cut the QP's send rate (default 1; 0: counted in rp_cnp_ignored)");

/*
 * Test only: mark 1 in N of our own ECN-capable frames CE on transmit, as a
 * switch above its marking threshold would, so the notification and
 * reaction points can be exercised (and the marks seen in a capture) on a
 * fabric that does not mark.  0, the default, marks none.
 */
static unsigned int tx_ce_one_in;
module_param(tx_ce_one_in, uint, 0644);
MODULE_PARM_DESC(tx_ce_one_in,
		 "Test only: send 1 in N ECN-capable RoCEv2 frames with CE, as a marking switch would (0: none)");

static unsigned int cnp_interval_us = 50;
static unsigned int cnp_dscp = 48;
static unsigned int rp_reduce_period_us = 4;
static unsigned int rp_g = 4;
static unsigned int rp_alpha_period_us = 55;
static unsigned int rp_time_reset_us = 300;
static unsigned int rp_byte_reset = 32767;
static unsigned int rp_threshold = 5;
static unsigned int rp_ai_rate = 5;
static unsigned int rp_hai_rate = 50;
static unsigned int rp_min_rate = 1;

/* Every value is checked: a write outside the range is refused (EINVAL). */
static int cnuas_cc_set_us(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, USEC_PER_SEC);
}

static int cnuas_cc_set_period(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, USEC_PER_SEC);
}

static int cnuas_cc_set_dscp(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 63);
}

static int cnuas_cc_set_g(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, CNUAS_CC_ONE);
}

static int cnuas_cc_set_rate(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, CNUAS_CC_LINE_RATE);
}

static int cnuas_cc_set_bytes(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 1U << 30);
}

static int cnuas_cc_set_threshold(const char *val,
				  const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 64);
}

#define CNUAS_CC_OPS(_name, _set)					\
	static const struct kernel_param_ops _name = {			\
		.set = _set,						\
		.get = param_get_uint,					\
	}

CNUAS_CC_OPS(cnuas_cc_us_ops, cnuas_cc_set_us);
CNUAS_CC_OPS(cnuas_cc_period_ops, cnuas_cc_set_period);
CNUAS_CC_OPS(cnuas_cc_dscp_ops, cnuas_cc_set_dscp);
CNUAS_CC_OPS(cnuas_cc_g_ops, cnuas_cc_set_g);
CNUAS_CC_OPS(cnuas_cc_rate_ops, cnuas_cc_set_rate);
CNUAS_CC_OPS(cnuas_cc_bytes_ops, cnuas_cc_set_bytes);
CNUAS_CC_OPS(cnuas_cc_threshold_ops, cnuas_cc_set_threshold);

module_param_cb(cnp_interval_us, &cnuas_cc_us_ops, &cnp_interval_us, 0644);
MODULE_PARM_DESC(cnp_interval_us,
		 "NP: at most one CNP per QP per this many microseconds (0..1000000, default 50)");
module_param_cb(cnp_dscp, &cnuas_cc_dscp_ops, &cnp_dscp, 0644);
MODULE_PARM_DESC(cnp_dscp, "NP: DSCP of CNPs (0..63, default 48); their ECN is Not-ECT");
module_param_cb(rp_reduce_period_us, &cnuas_cc_us_ops, &rp_reduce_period_us,
		0644);
MODULE_PARM_DESC(rp_reduce_period_us,
		 "RP: at most one rate cut per QP per this many microseconds (default 4)");
module_param_cb(rp_g, &cnuas_cc_g_ops, &rp_g, 0644);
MODULE_PARM_DESC(rp_g, "RP: alpha gain g in 1/1024 units (1..1024, default 4)");
module_param_cb(rp_alpha_period_us, &cnuas_cc_period_ops, &rp_alpha_period_us,
		0644);
MODULE_PARM_DESC(rp_alpha_period_us,
		 "RP: alpha decays once per this many microseconds without a CNP (default 55)");
module_param_cb(rp_time_reset_us, &cnuas_cc_period_ops, &rp_time_reset_us,
		0644);
MODULE_PARM_DESC(rp_time_reset_us,
		 "RP: rate increase timer period in microseconds (default 300)");
module_param_cb(rp_byte_reset, &cnuas_cc_bytes_ops, &rp_byte_reset, 0644);
MODULE_PARM_DESC(rp_byte_reset,
		 "RP: rate increase byte counter in bytes (default 32767)");
module_param_cb(rp_threshold, &cnuas_cc_threshold_ops, &rp_threshold, 0644);
MODULE_PARM_DESC(rp_threshold,
		 "RP: fast recovery events before additive increase, F (1..64, default 5)");
module_param_cb(rp_ai_rate, &cnuas_cc_rate_ops, &rp_ai_rate, 0644);
MODULE_PARM_DESC(rp_ai_rate, "RP: additive increase in Mb/s (default 5)");
module_param_cb(rp_hai_rate, &cnuas_cc_rate_ops, &rp_hai_rate, 0644);
MODULE_PARM_DESC(rp_hai_rate, "RP: hyper increase in Mb/s (default 50)");
module_param_cb(rp_min_rate, &cnuas_cc_rate_ops, &rp_min_rate, 0644);
MODULE_PARM_DESC(rp_min_rate, "RP: lowest rate a QP is cut to, in Mb/s (default 1)");

/**
 * cnuas_ib_tos - the IPv4 TOS / IPv6 traffic class of a RoCEv2 frame
 * @tclass: the address's traffic class (DSCP and ECN bits)
 * @opcode: the BTH opcode
 *
 * CNPs: cnp_dscp and Not-ECT (a switch must not mark the notification).
 * Everything else: the DSCP of @tclass with ECT(0) when ecn is on, else
 * @tclass as given.
 */
u8 cnuas_ib_tos(u8 tclass, u8 opcode)
{
	unsigned int ce_n = READ_ONCE(tx_ce_one_in);

	if (opcode == CNUAS_OPCODE_CNP)
		return READ_ONCE(cnp_dscp) << 2;
	if (!READ_ONCE(ecn))
		return tclass;
	if (unlikely(ce_n) && !get_random_u32_below(ce_n))
		return (tclass & ~INET_ECN_MASK) | INET_ECN_CE;
	return (tclass & ~INET_ECN_MASK) | INET_ECN_ECT_0;
}

/* Does a parsed RoCEv2 frame carry CE in its IP header? */
bool cnuas_ib_pkt_ce(const struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt((struct sk_buff *)skb);
	const u8 *ip = skb->data + pkt->net_off;

	if (pkt->family == AF_INET)
		return INET_ECN_is_ce(((const struct iphdr *)ip)->tos);
	if (pkt->family == AF_INET6)
		return INET_ECN_is_ce(ipv6_get_dsfield((const struct ipv6hdr *)ip));
	return false;
}

static enum hrtimer_restart cnuas_ib_cc_pace_fn(struct hrtimer *t)
{
	struct cnuas_ib_qp *qp = container_of(t, struct cnuas_ib_qp,
					      cc.pace_timer);

	cnuas_ib_qp_kick(qp);
	return HRTIMER_NORESTART;
}

/* Unlimited, the NP's interval forgotten. */
static void cnuas_ib_cc_clear(struct cnuas_ib_cc *cc)
{
	WRITE_ONCE(cc->limited, false);
	cc->rate = CNUAS_CC_LINE_RATE;
	cc->target = CNUAS_CC_LINE_RATE;
	cc->alpha = CNUAS_CC_ONE;
	cc->cnp_sent = false;
}

/* A new QP (not yet visible to the receive path: no lock needed). */
void cnuas_ib_cc_init(struct cnuas_ib_qp *qp)
{
	spin_lock_init(&qp->cc.lock);
	hrtimer_init(&qp->cc.pace_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	qp->cc.pace_timer.function = cnuas_ib_cc_pace_fn;
	cnuas_ib_cc_clear(&qp->cc);
}

/* Back to RESET: qp->lock held, bottom halves off (cc->lock is softirq's too). */
void cnuas_ib_cc_reset(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_cc *cc = &qp->cc;

	spin_lock(&cc->lock);
	cnuas_ib_cc_clear(cc);
	spin_unlock(&cc->lock);
	hrtimer_try_to_cancel(&cc->pace_timer);
}

/* Destroy: no timer runs after this. */
void cnuas_ib_cc_destroy(struct cnuas_ib_qp *qp)
{
	hrtimer_cancel(&qp->cc.pace_timer);
}

/* One rate increase event (timer or byte counter).  cc->lock held. */
static void cnuas_ib_cc_increase(struct cnuas_ib_cc *cc)
{
	u32 f = READ_ONCE(rp_threshold);
	u32 ai = READ_ONCE(rp_ai_rate);
	u32 lo = min(cc->t_stage, cc->bc_stage);
	u32 hi = max(cc->t_stage, cc->bc_stage);
	u64 target = cc->target;

	if (lo > f)		/* hyper increase */
		target += (u64)(lo - f) * READ_ONCE(rp_hai_rate);
	else if (hi >= f)	/* additive increase */
		target += ai;
	/* else fast recovery: towards the rate before the last cut */
	cc->target = min_t(u64, target, CNUAS_CC_LINE_RATE);
	cc->rate = (cc->target + cc->rate) / 2;
	if (cc->rate + ai >= CNUAS_CC_LINE_RATE) {
		/* recovered: no pacing until the next CNP */
		cc->rate = CNUAS_CC_LINE_RATE;
		cc->target = CNUAS_CC_LINE_RATE;
		WRITE_ONCE(cc->limited, false);
	}
}

/* Bring alpha and the increase timer up to @now.  cc->lock held. */
static void cnuas_ib_cc_advance(struct cnuas_ib_cc *cc, u64 now)
{
	u64 period = (u64)READ_ONCE(rp_alpha_period_us) * NSEC_PER_USEC;
	u32 g = READ_ONCE(rp_g);
	int n;

	for (n = 0; now - cc->alpha_ns >= period; n++) {
		if (n == CNUAS_CC_MAX_STEPS || !cc->alpha) {
			cc->alpha_ns = now;
			break;
		}
		cc->alpha -= DIV_ROUND_UP(cc->alpha * g, CNUAS_CC_ONE);
		cc->alpha_ns += period;
	}

	period = (u64)READ_ONCE(rp_time_reset_us) * NSEC_PER_USEC;
	for (n = 0; cc->limited && now - cc->timer_ns >= period; n++) {
		if (n == CNUAS_CC_MAX_STEPS) {
			/* idle for long: as good as recovered */
			cc->rate = CNUAS_CC_LINE_RATE;
			cc->target = CNUAS_CC_LINE_RATE;
			WRITE_ONCE(cc->limited, false);
			break;
		}
		cc->timer_ns += period;
		cc->t_stage++;
		cnuas_ib_cc_increase(cc);
	}
}

/**
 * cnuas_ib_cc_may_send - may the requester send its next packet now?
 * @qp: the QP, qp->lock held
 *
 * Return: true at once for an unlimited QP.  A paced QP may send while its
 * token bucket is not in debt; otherwise the pacing timer is armed for when
 * it will be, and the requester stops until then.
 */
bool cnuas_ib_cc_may_send(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_cc *cc = &qp->cc;
	u64 now, fill;
	bool ok = true;
	s64 wait;

	if (likely(!READ_ONCE(cc->limited)))
		return true;
	now = ktime_get_ns();
	spin_lock(&cc->lock);
	cnuas_ib_cc_advance(cc, now);
	if (!cc->limited)
		goto out;
	fill = min_t(u64, now - cc->refill_ns, NSEC_PER_SEC);
	/* Mb/s are bits per microsecond: bytes = ns * rate / 8000 */
	cc->tokens = min_t(s64, cc->tokens + div_u64(fill * cc->rate, 8000),
			   CNUAS_CC_BURST);
	cc->refill_ns = now;
	if (cc->tokens <= 0) {
		ok = false;
		wait = div_u64((u64)(1 - cc->tokens) * 8000, cc->rate) + 1;
		if (!hrtimer_active(&cc->pace_timer))
			hrtimer_start(&cc->pace_timer, ns_to_ktime(wait),
				      HRTIMER_MODE_REL_SOFT);
	}
out:
	spin_unlock(&cc->lock);
	return ok;
}

/**
 * cnuas_ib_cc_sent - a paced QP sent @len bytes
 * @qp: the QP, qp->lock held
 * @len: the frame's length
 *
 * Takes the bytes from the bucket and feeds the byte counter.
 */
void cnuas_ib_cc_sent(struct cnuas_ib_qp *qp, u32 len)
{
	struct cnuas_ib_cc *cc = &qp->cc;
	u32 reset;

	if (likely(!READ_ONCE(cc->limited)))
		return;
	reset = READ_ONCE(rp_byte_reset);
	spin_lock(&cc->lock);
	cc->tokens -= len;
	cc->bytes += len;
	while (cc->limited && cc->bytes >= reset) {
		cc->bytes -= reset;
		cc->bc_stage++;
		cnuas_ib_cc_increase(cc);
	}
	spin_unlock(&cc->lock);
}

/* A CNP for @qp arrived: cut its rate (or ignore it).  Softirq context. */
static void cnuas_ib_rp_cnp(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_dev *dev = qp->dev;
	struct cnuas_ib_cc *cc = &qp->cc;
	u64 now = ktime_get_ns();
	u64 period;
	u32 g;

	if (!READ_ONCE(dcqcn)) {
		cnuas_stat_inc(dev, CNUAS_STAT_RP_CNP_IGNORED);
		return;
	}
	period = (u64)READ_ONCE(rp_reduce_period_us) * NSEC_PER_USEC;
	g = READ_ONCE(rp_g);
	spin_lock(&cc->lock);
	if (cc->limited && now - cc->cut_ns < period) {
		spin_unlock(&cc->lock);
		cnuas_stat_inc(dev, CNUAS_STAT_RP_CNP_IGNORED);
		return;
	}
	if (!cc->limited) {
		/* from line rate: a fresh DCQCN state, a full bucket */
		cc->rate = CNUAS_CC_LINE_RATE;
		cc->alpha = CNUAS_CC_ONE;
		cc->tokens = CNUAS_CC_BURST;
		cc->refill_ns = now;
	} else {
		cnuas_ib_cc_advance(cc, now);
	}
	cc->target = cc->rate;
	cc->rate = max_t(u32, cc->rate - div_u64((u64)cc->rate * cc->alpha,
						 2 * CNUAS_CC_ONE),
			 READ_ONCE(rp_min_rate));
	cc->alpha = cc->alpha - DIV_ROUND_UP(cc->alpha * g, CNUAS_CC_ONE) + g;
	cc->alpha = min(cc->alpha, CNUAS_CC_ONE);
	cc->t_stage = 0;
	cc->bc_stage = 0;
	cc->bytes = 0;
	cc->cut_ns = now;
	cc->alpha_ns = now;
	cc->timer_ns = now;
	WRITE_ONCE(cc->limited, true);
	spin_unlock(&cc->lock);
	cnuas_stat_inc(dev, CNUAS_STAT_RP_CNP_HANDLED);
}

/**
 * cnuas_ib_rx_cnp - a received CNP (RoCEv2, ICRC checked)
 * @dev: the device
 * @skb: the CNP, consumed
 *
 * A CNP for a QP we do not have, or for a QP that sends nothing paced (GSI),
 * is counted in rp_cnp_ignored.
 */
void cnuas_ib_rx_cnp(struct cnuas_ib_dev *dev, struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	struct cnuas_ib_qp *qp;

	if (pkt->paylen != CNUAS_CNP_PAYLOAD_BYTES) {
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_HDR_ERR);
		cnuas_stat_inc(dev, CNUAS_STAT_RCVD_DROP);
		goto free;
	}
	rcu_read_lock();
	qp = xa_load(&dev->qps, pkt->qpn);
	if (qp && !READ_ONCE(qp->dying) &&
	    (qp->type == IB_QPT_RC || qp->type == IB_QPT_UD)) {
		cnuas_ib_rp_cnp(qp);
		/* the engine goes on at the new rate */
		cnuas_ib_qp_kick(qp);
	} else {
		cnuas_stat_inc(dev, CNUAS_STAT_RP_CNP_IGNORED);
	}
	rcu_read_unlock();
free:
	kfree_skb(skb);
}

/* UD: the address a CE-marked packet came from, to answer it. */
static void cnuas_ib_np_ud_av(struct sk_buff *skb, struct cnuas_ib_av *av)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	const u8 *ip = skb->data + pkt->net_off;

	memset(av, 0, sizeof(*av));
	av->family = pkt->family;
	ether_addr_copy(av->dmac, skb->data + ETH_ALEN);
	av->hop_limit = 64;
	if (pkt->family == AF_INET) {
		const struct iphdr *ip4 = (const struct iphdr *)ip;

		ipv6_addr_set_v4mapped(ip4->daddr, &av->saddr);
		ipv6_addr_set_v4mapped(ip4->saddr, &av->daddr);
	} else {
		const struct ipv6hdr *ip6 = (const struct ipv6hdr *)ip;

		av->saddr = ip6->daddr;
		av->daddr = ip6->saddr;
	}
}

/**
 * cnuas_ib_np_ce - notification point: answer a CE-marked packet
 * @qp: the QP it arrived on, qp->lock held (the engine)
 * @skb: the packet (still the caller's)
 *
 * Sends a CNP to the QP the packet came from — an RC QP's connected peer
 * (only for packets from that peer), a UD packet's DETH source QP — unless
 * this QP sent one less than cnp_interval_us ago.
 */
void cnuas_ib_np_ce(struct cnuas_ib_qp *qp, struct sk_buff *skb)
{
	const struct cnuas_pkt *pkt = cnuas_pkt(skb);
	u64 interval = (u64)READ_ONCE(cnp_interval_us) * NSEC_PER_USEC;
	struct cnuas_ib_cc *cc = &qp->cc;
	const struct cnuas_ib_av *avp;
	struct cnuas_ib_av ud_av;
	struct cnuas_bth *bth;
	struct sk_buff *cnp;
	u64 now;
	u32 dqpn;

	if (qp->type == IB_QPT_RC) {
		if (!cnuas_ib_pkt_from_peer(qp, skb))
			return;
		dqpn = qp->attr.dest_qp_num;
		avp = &qp->av;
	} else if (qp->type == IB_QPT_UD && (pkt->mask & CNUAS_OP_DETH)) {
		const struct cnuas_deth *deth = cnuas_pkt_hdr(skb, CNUAS_HDR_DETH);

		dqpn = ntohl(deth->sqp) & CNUAS_QPN_MASK;
		cnuas_ib_np_ud_av(skb, &ud_av);
		avp = &ud_av;
	} else {
		return;
	}
	now = ktime_get_ns();
	if (cc->cnp_sent && now - cc->cnp_ns < interval)
		return;
	cnp = cnuas_ib_frame_alloc(qp, avp, CNUAS_OPCODE_CNP,
				   CNUAS_CNP_PAYLOAD_BYTES, &bth);
	if (!cnp)
		return;
	/*
	 * BECN set, FECN clear; AckReq and PSN 0.  The 16 reserved bytes are
	 * zeroed here: frame_alloc leaves the payload to its caller, and heap
	 * memory is not zero unless init_on_alloc says so.
	 */
	bth->qpn = htonl(CNUAS_BTH_BECN | (dqpn & CNUAS_QPN_MASK));
	bth->apsn = 0;
	memset((u8 *)bth + cnuas_ib_opcode[CNUAS_OPCODE_CNP].hdr_len, 0,
	       CNUAS_CNP_PAYLOAD_BYTES);
	cnuas_ib_frame_finish(qp, cnp);
	cc->cnp_sent = true;
	cc->cnp_ns = now;
	if (!cnuas_ib_xmit(qp, cnp))
		cnuas_stat_inc(qp->dev, CNUAS_STAT_NP_CNP_SENT);
}
