/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The capture's shares of the ring (Options.Rate, Options.UserRate,
 * Options.FrameCost): token buckets per connection and per user, charged
 * for the bytes copied and for every frame walked.
 */
#ifndef H2_RINGSHARE_H
#define H2_RINGSHARE_H

/*
 * A token bucket: rate a second, burst at most. A call made while it is
 * empty is not walked (throttled): a counted hole, after which the
 * direction finds its frames again at a later call, once the bucket
 * refilled. The bucket may go below zero by what one call cost (at most
 * H2_STEPS frames), which later calls pay back. Racy across CPUs by
 * design: a bound, not an account.
 */
static __always_inline bool h2_refill(__s64 *tokens, __u64 *ns, __u64 now, __u64 rate, __u64 burst)
{
	__u64 dt = 0;
	__s64 t;

	if (now > *ns)
		dt = now - *ns;
	if (dt > 1000000000ULL)
		dt = 1000000000ULL;
	t = *tokens + (__s64)(dt * rate / 1000000000ULL);
	if (t > (__s64)burst)
		t = (__s64)burst;
	*tokens = t;
	*ns = now;
	return t > 0;
}

/*
 * A connection's share of the ring (h2_rate, h2_burst). One process pair
 * writing header blocks faster than the reader drains them would otherwise
 * lap the ring, and every other connection's records with it.
 */
static __always_inline bool h2_tokens(struct h2_conn *c, __u64 now)
{
	return h2_refill(&c->tb_tokens, &c->tb_ns, now, h2_rate, h2_burst);
}

/*
 * A user's share: all the connections whose calls a uid makes, together
 * (h2_user_rate, h2_user_burst), so that a user who opens many connections
 * gets no more of the ring, nor of the collector's CPU, than one share.
 * Keyed by the uid (the initial user namespace's) of the task making the
 * call: the one identity an unprivileged process cannot multiply (a user
 * with a delegated cgroup subtree, as systemd gives every login, makes
 * cgroups at will: a share per cgroup would be a share per command). Uid 0
 * is keyed by the task's cgroup instead: the containers of a node mostly
 * run as uid 0 without a user namespace, and one pod's flood must not
 * spend every other pod's share; a process needs root, or a delegation,
 * to make cgroups, and root is trusted. The price: processes of one uid
 * other than 0 share it. The bytes a socket reads are charged
 * to the reader: a remote peer flooding a server spends the server's share.
 * LRU-bounded: a user whose entry was evicted (by as many other users'
 * calls) starts again with a full bucket, which no one user can force.
 */
struct h2_user {
	__s64 tokens;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); /* replaced by the loader (Options.MaxUsers) */
	__type(key, __u64); /* h2_user_key */
	__type(value, struct h2_user);
} h2_users SEC(".maps");

/* The calling task's user's bucket, made full when new; NULL only when the
 * map refuses (never expected). */
static __always_inline struct h2_user *h2_user_share(__u64 now)
{
	__u64 key = (__u32)bpf_get_current_uid_gid();

	/* uid 0: its cgroup (a pod), marked by the top bit (no uid has it) */
	if (key == 0)
		key = bpf_get_current_cgroup_id() | (1ULL << 63);
	struct h2_user *u = bpf_map_lookup_elem(&h2_users, &key);

	if (u)
		return u;
	struct h2_user n = {.tokens = (__s64)h2_user_burst, .ns = now};

	bpf_map_update_elem(&h2_users, &key, &n, BPF_NOEXIST);
	return bpf_map_lookup_elem(&h2_users, &key);
}

#endif /* H2_RINGSHARE_H */
