//go:build !linux

package bpftrace

func prepareHost() {}
