package native

//go:generate go tool bpf2go -tags linux -cc clang-14 -cflags "-O2 -g -Wall -Werror" -target bpfel -type native_stats native native.bpf.c -- -I../../../../bpf -I../../../../bpf/headers
