/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A connection's share of the ring (Options.Rate): a token bucket of
 * copied bytes.
 */
#ifndef H2_RINGSHARE_H
#define H2_RINGSHARE_H

/*
 * A connection's share of the ring, a token bucket of copied bytes: h2_rate
 * a second, h2_burst at most. One process pair writing header blocks faster
 * than the reader drains them would otherwise lap the ring, and every other
 * connection's records with it. A call made while the bucket is empty is
 * not walked (throttled): a counted hole, after which the direction finds
 * its frames again at a later call, once the bucket refilled. The bucket
 * may go below zero by what one call copied. Racy across CPUs by design: a
 * bound, not an account.
 */
static __always_inline bool h2_tokens(struct h2_conn *c, __u64 now)
{
	__u64 dt = 0;
	__s64 t;

	if (now > c->tb_ns)
		dt = now - c->tb_ns;
	if (dt > 1000000000ULL)
		dt = 1000000000ULL;
	t = c->tb_tokens + (__s64)(dt * h2_rate / 1000000000ULL);
	if (t > (__s64)h2_burst)
		t = (__s64)h2_burst;
	c->tb_tokens = t;
	c->tb_ns = now;
	return t > 0;
}

#endif /* H2_RINGSHARE_H */
