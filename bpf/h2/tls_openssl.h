/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * OpenSSL: SSL_write / SSL_read and SSL_write_ex / SSL_read_ex (uprobe on
 * entry for the buffer, uretprobe for the length: h2_ssl_write_ret and
 * h2_ssl_read_ret serve both forms, told apart by what the entry saved),
 * SSL_free ends the session. Uretprobes are never used on Go code.
 */
#ifndef H2_TLS_OPENSSL_H
#define H2_TLS_OPENSSL_H

static __always_inline int h2_tls_enter(void *ssl, const void *buf, void *outp)
{
	struct h2_tls_args a = {.ssl = (__u64)ssl, .buf = (__u64)buf, .outp = (__u64)outp};
	__u64 id = bpf_get_current_pid_tgid();

	bpf_map_update_elem(&h2_tls_calls, &id, &a, BPF_ANY);
	return 0;
}

static __always_inline int h2_tls_exit(int dir, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct h2_stats *st = h2_st();
	struct h2_tls_args *a, args;

	a = bpf_map_lookup_elem(&h2_tls_calls, &id);
	if (!a)
		return 0;
	args = *a;
	bpf_map_delete_elem(&h2_tls_calls, &id);
	if (!st)
		return 0;
	if (args.outp) {
		/* SSL_write_ex / SSL_read_ex: 1 on success, the length stored at outp. */
		__u64 n = 0;

		if (ret != 1)
			return 0;
		if (bpf_probe_read_user(&n, sizeof(n), (void *)args.outp)) {
			st->read_fault++;
			return 0;
		}
		ret = n;
	}
	if (ret <= 0)
		return 0;
	st->tls_calls++;
	h2_tls_data(h2_tls_key(args.ssl, H2_K_OPENSSL), args.buf, dir, ret, st);
	return 0;
}

SEC("uprobe/SSL_write")
int BPF_KPROBE(h2_ssl_write, void *ssl, const void *buf, int num)
{
	return h2_tls_enter(ssl, buf, 0);
}

SEC("uretprobe/SSL_write")
int BPF_KRETPROBE(h2_ssl_write_ret, int ret)
{
	return h2_tls_exit(H2_EGRESS, ret);
}

SEC("uprobe/SSL_read")
int BPF_KPROBE(h2_ssl_read, void *ssl, void *buf, int num)
{
	return h2_tls_enter(ssl, buf, 0);
}

SEC("uretprobe/SSL_read")
int BPF_KRETPROBE(h2_ssl_read_ret, int ret)
{
	return h2_tls_exit(H2_INGRESS, ret);
}

/* OpenSSL 1.1.1+: int SSL_write_ex(SSL *, const void *, size_t, size_t *written). */
SEC("uprobe/SSL_write_ex")
int BPF_KPROBE(h2_ssl_write_ex, void *ssl, const void *buf, __u64 num, void *written)
{
	return h2_tls_enter(ssl, buf, written);
}

/* int SSL_read_ex(SSL *, void *, size_t, size_t *readbytes). */
SEC("uprobe/SSL_read_ex")
int BPF_KPROBE(h2_ssl_read_ex, void *ssl, void *buf, __u64 num, void *readbytes)
{
	return h2_tls_enter(ssl, buf, readbytes);
}

SEC("uprobe/SSL_free")
int BPF_KPROBE(h2_ssl_free, void *ssl)
{
	struct h2_key key = h2_tls_key((__u64)ssl, H2_K_OPENSSL);

	h2_close_conn(key, 2, true);
	bpf_map_delete_elem(&h2_ssl_isn, &key);
	return 0;
}

#endif /* H2_TLS_OPENSSL_H */
