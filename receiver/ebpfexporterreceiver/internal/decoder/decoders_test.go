// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package decoder

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// Fixture files the host-reading decoders are pointed at.
const testKallsyms = `ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81379d40 T __do_sys_getppid
ffffffff81379d40 T __ia32_sys_getppid
ffffffff81379d40 T __x64_sys_getppid
ffffffff82202560 T do_nanosleep
ffffffff82202700 t hrtimer_nanosleep_restart
ffffffffc0a01000 t nf_hook	[nf_tables]
`

const testPartitions = `major minor  #blocks  name

 259        0  104857600 nvme0n1
 259        1     524288 nvme0n1p1
   8        0   10485760 sda
   8       17    1048576 sdb1
`

const testPCIIDs = `# pci.ids sample
8086  Intel Corporation
	1000  82542 Gigabit Ethernet Controller (Fiber)
		0e11 b0df  Gigabit Server Adapter
	10d3  82574L Gigabit Network Connection
15b3  Mellanox Technologies
	101f  MT2894 Family [ConnectX-6 Lx]
0e11  Compaq Computer Corporation
C 01  Mass storage controller
	08  Non-Volatile memory controller
		02  NVM Express
C 02  Network controller
	00  Ethernet controller
	80  Network controller
`

func testEnv(t testing.TB) Env {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	return Env{
		KallsymsPath:   write("kallsyms", testKallsyms),
		PartitionsPath: write("partitions", testPartitions),
		PCIIDsPath:     write("pci.ids", testPCIIDs),
		CgroupPath: func(id uint64) string {
			if id == 4242 {
				return "/sys/fs/cgroup/system.slice/sshd.service"
			}
			return ""
		},
		IfaceName: func(idx uint32) string {
			if idx == 1 {
				return "lo"
			}
			return ""
		},
		ErrnoName: errnoName,
	}
}

func u16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

type decodeCase struct {
	name    string
	in      []byte
	conf    spec.Decoder
	want    string
	wantErr string // substring; "" means no error
	skip    bool   // want ErrSkipLabelSet
}

func runDecodeCases(t *testing.T, s *Set, decoder string, cases []decodeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(decoder+"/"+c.name, func(t *testing.T) {
			out, err := s.decodeOne(decoder, c.in, c.conf)
			switch {
			case c.skip:
				require.ErrorIs(t, err, ErrSkipLabelSet)
			case c.wantErr != "":
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
			default:
				require.NoError(t, err)
				assert.Equal(t, c.want, string(out))
			}
		})
	}
}

func TestDecoderUint(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "uint", []decodeCase{
		{name: "u8", in: []byte{200}, want: "200"},
		{name: "u16", in: u16(65535), want: "65535"},
		{name: "u32", in: u32(4000000000), want: "4000000000"},
		{name: "u64", in: u64(18446744073709551615), want: "18446744073709551615"},
		{name: "zero", in: u32(0), want: "0"},
		{name: "size 3", in: []byte{1, 2, 3}, wantErr: `error decoding with decoder "uint": unknown value length 3 for []byte{0x1, 0x2, 0x3}`},
	})
}

func TestDecoderString(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "string", []decodeCase{
		{name: "nul terminated", in: []byte("bash\x00\x00\x00garbage"), want: "bash"},
		{name: "no nul", in: []byte("exactly16bytes!!"), want: "exactly16bytes!!"},
		{name: "empty", in: []byte{0, 0, 0, 0}, want: ""},
	})
}

func TestDecoderHex(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "hex", []decodeCase{
		{name: "bytes", in: []byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x0a}, want: "deadbeef000a"},
	})
}

func TestDecoderKsym(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "ksym", []decodeCase{
		{name: "exact", in: u64(0xffffffff82202560), want: "do_nanosleep"},
		// Several symbols at one address: the last one in file order.
		{name: "aliases", in: u64(0xffffffff81379d40), want: "__x64_sys_getppid"},
		// Module symbols keep ebpf_exporter's "name\t[module]" form.
		{name: "module", in: u64(0xffffffffc0a01000), want: "nf_hook\t[nf_tables]"},
		{name: "inside a function", in: u64(0xffffffff82202561), want: "unknown_addr:0xffffffff82202561"},
		{name: "zero", in: u64(0), want: "unknown_addr:0x0"},
	})
}

func TestDecoderKstack(t *testing.T) {
	s := NewSet(testEnv(t))
	stack := append(append(append(u64(0xffffffff82202570), u64(0xffffffff81379d41)...), u64(0x10)...), u64(0)...)
	stack = append(stack, u64(0xffffffff82202560)...) // after the terminating zero: ignored
	runDecodeCases(t, s, "kstack", []decodeCase{
		{name: "frames", in: stack, want: "do_nanosleep\n__x64_sys_getppid\n??"},
		{name: "empty", in: make([]byte, 16), want: ""},
	})
}

func TestDecoderKsymMissingKallsyms(t *testing.T) {
	env := testEnv(t)
	env.KallsymsPath = filepath.Join(t.TempDir(), "missing")
	s := NewSet(env)
	_, err := s.decodeOne("ksym", u64(1), spec.Decoder{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "error opening kallsyms")
}

func TestDecoderSyscall(t *testing.T) {
	cases := map[string][]decodeCase{
		"amd64": {
			{name: "read", in: []byte("0"), want: "read"},
			{name: "getppid", in: []byte("110"), want: "getppid"},
			{name: "strace name: pread64", in: []byte("17"), want: "pread"},
			{name: "strace name: exit_group", in: []byte("231"), want: "exit"},
			{name: "strace name: epoll_ctl_old", in: []byte("214"), want: "printargs"},
			{name: "time64 name", in: []byte("228"), want: "clock_gettime64"},
			{name: "gap", in: []byte("400"), want: "unknown_syscall:400"},
		},
		"arm64": {
			{name: "io_setup", in: []byte("0"), want: "io_setup"},
			{name: "getppid", in: []byte("173"), want: "getppid"},
			{name: "strace name: pread64", in: []byte("67"), want: "pread"},
			{name: "strace name: exit_group", in: []byte("94"), want: "exit"},
			{name: "strace name: lsetxattr", in: []byte("6"), want: "setxattr"},
			{name: "time64 name", in: []byte("113"), want: "clock_gettime64"},
			{name: "arch_specific_syscall", in: []byte("244"), want: "unknown_syscall:244"},
			{name: "gap", in: []byte("400"), want: "unknown_syscall:400"},
		},
	}[runtime.GOARCH]
	if cases == nil {
		t.Skip("no syscall table for " + runtime.GOARCH)
	}
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "syscall", append(cases, []decodeCase{
		{name: "last known", in: []byte("461"), want: "lsm_list_modules"},
		{name: "unknown", in: []byte("462"), want: "unknown_syscall:462"},
		{name: "not a number", in: []byte("x"), wantErr: `error decoding with decoder "syscall": strconv.Atoi: parsing "x"`},
	}...))
}

func TestDecoderErrno(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("errno names are Linux's")
	}
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "errno", []decodeCase{
		{name: "EPERM", in: []byte("1"), want: "EPERM"},
		{name: "ESRCH", in: []byte("3"), want: "ESRCH"},
		{name: "EAGAIN", in: []byte("11"), want: "EAGAIN"},
		{name: "zero", in: []byte("0"), want: "unknown:0"},
		{name: "unknown", in: []byte("4095"), want: "unknown:4095"},
		{name: "not a number", in: []byte("-1"), wantErr: `error parsing "-1" as uint`},
	})
}

func TestDecoderCgroup(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "cgroup", []decodeCase{
		{name: "known", in: []byte("4242"), want: "/sys/fs/cgroup/system.slice/sshd.service"},
		{name: "unknown", in: []byte("7"), want: "unknown_cgroup_id:7"},
		{name: "not a number", in: u64(1), wantErr: "strconv.Atoi"},
	})
}

func TestDecoderStaticMap(t *testing.T) {
	s := NewSet(testEnv(t))
	m := map[string]string{"1": "read", "2": "write"}
	runDecodeCases(t, s, "static_map", []decodeCase{
		{name: "hit", in: []byte("2"), conf: spec.Decoder{StaticMap: m}, want: "write"},
		{name: "miss", in: []byte("3"), conf: spec.Decoder{StaticMap: m}, want: "unknown:3"},
		{name: "miss allowed", in: []byte("3"), conf: spec.Decoder{StaticMap: m, AllowUnknown: true}, want: "3"},
		{name: "no map", in: []byte("3"), conf: spec.Decoder{}, want: "empty mapping"},
	})
}

func TestDecoderRegexp(t *testing.T) {
	s := NewSet(testEnv(t))
	conf := spec.Decoder{Regexps: []string{"^sshd$", "^nginx"}}
	runDecodeCases(t, s, "regexp", []decodeCase{
		{name: "first matches", in: []byte("sshd"), conf: conf, want: "sshd"},
		// ebpf_exporter's label is the match, not the input (the parity test found it).
		{name: "second matches: the match", in: []byte("nginx-worker"), conf: conf, want: "nginx"},
		{name: "no match skips the label set", in: []byte("bash"), conf: conf, skip: true},
		{name: "one group: the group", in: []byte("nginx-worker-3"), conf: spec.Decoder{Regexps: []string{`^nginx-(\w+)`}}, want: "worker"},
		{name: "one group that did not take part: empty", in: []byte("nginx"), conf: spec.Decoder{Regexps: []string{`^nginx(-\w+)?`}}, want: ""},
		{name: "two groups: passed over", in: []byte("nginx-worker"), conf: spec.Decoder{Regexps: []string{`^(nginx)-(\w+)`, "worker$"}}, want: "worker"},
		{name: "two groups only: skipped", in: []byte("nginx-worker"), conf: spec.Decoder{Regexps: []string{`^(nginx)-(\w+)`}}, skip: true},
		{name: "no regexps", in: []byte("bash"), conf: spec.Decoder{}, wantErr: `error decoding with decoder "regexp": no regexps defined in config`},
		{name: "bad regexp", in: []byte("bash"), conf: spec.Decoder{Regexps: []string{"("}}, wantErr: `error compiling regexp "("`},
	})
}

func TestDecoderDname(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "dname", []decodeCase{
		{name: "name", in: []byte("\x07example\x03com\x00"), want: "example.com."},
		{name: "padded", in: []byte("\x03www\x00\x00\x00"), want: "www..."},
		{name: "root", in: []byte{}, want: "."},
		{name: "overrun returned as is", in: []byte("\x09short"), want: "\x09short"},
	})
}

func TestDecoderInetIP(t *testing.T) {
	s := NewSet(testEnv(t))
	v6 := []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	mapped := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}
	runDecodeCases(t, s, "inet_ip", []decodeCase{
		{name: "v4", in: []byte{192, 168, 1, 10}, want: "192.168.1.10"},
		{name: "v6", in: v6, want: "2001:db8::1"},
		{name: "v4 mapped", in: mapped, want: "10.0.0.1"},
		{name: "odd size", in: []byte{1, 2, 3}, want: "?010203"},
	})
}

func TestDecoderIfname(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "ifname", []decodeCase{
		{name: "known", in: u32(1), want: "lo"},
		{name: "unknown", in: u32(77), want: "unknown:77"},
		{name: "short", in: u16(1), wantErr: "ifname needs 4 bytes"},
	})
}

func TestDecoderMajorMinor(t *testing.T) {
	s := NewSet(testEnv(t))
	enc := func(major, minor uint32) []byte { // the kernel's new_encode_dev
		return u32((minor & 0xff) | (major << 8) | ((minor &^ 0xff) << 12))
	}
	runDecodeCases(t, s, "majorminor", []decodeCase{
		{name: "sda", in: enc(8, 0), want: "sda"},
		{name: "sdb1", in: enc(8, 17), want: "sdb1"},
		{name: "nvme0n1p1", in: enc(259, 1), want: "nvme0n1p1"},
		{name: "unknown", in: enc(9, 300), want: "unknown:9:300"},
	})
}

func TestDecoderPCI(t *testing.T) {
	s := NewSet(testEnv(t))
	runDecodeCases(t, s, "pci_vendor", []decodeCase{
		{name: "intel", in: []byte("32902"), want: "Intel Corporation"}, // 0x8086
		{name: "unknown", in: []byte("48879"), want: "unknown pci vendor: 0xbeef"},
		// %02x of 0x0e11 is "e11": ebpf_exporter misses vendors below 0x1000.
		{name: "short id", in: []byte("3601"), want: "unknown pci vendor: 0xe11"},
	})
	runDecodeCases(t, s, "pci_device", []decodeCase{
		{name: "82542", in: []byte("2156269568"), want: "82542 Gigabit Ethernet Controller (Fiber)"}, // 0x80861000
		{name: "connectx", in: []byte("364056607"), want: "MT2894 Family [ConnectX-6 Lx]"},           // 0x15b3101f
		{name: "unknown", in: []byte("3735928559"), want: "unknown pci device: 0xdeadbeef"},
	})
	runDecodeCases(t, s, "pci_class", []decodeCase{
		{name: "network", in: []byte("2"), want: "Network controller"},
		{name: "unknown", in: []byte("255"), want: "unknown pci class: 0xff"},
	})
	runDecodeCases(t, s, "pci_subclass", []decodeCase{
		{name: "nvme", in: []byte("264"), want: "Non-Volatile memory controller"}, // 0x0108
		{name: "unknown subclass", in: []byte("527"), want: "unknown pci subclass: 0x0f (class 0x02)"},
		{name: "unknown class", in: []byte("65280"), want: "unknown pci class: 0xff"},
		{name: "not a number", in: []byte("x"), wantErr: "strconv.Atoi"},
	})
}

func TestDecoderPCIMissingDB(t *testing.T) {
	env := testEnv(t)
	env.PCIIDsPath = filepath.Join(t.TempDir(), "pci.ids")
	s := NewSet(env)
	for _, d := range []string{"pci_vendor", "pci_device", "pci_class", "pci_subclass"} {
		runDecodeCases(t, s, d, []decodeCase{{name: "missing", in: []byte("32902"), want: "missing pci.ids db"}})
	}
}

func TestDecodeLabels(t *testing.T) {
	s := NewSet(testEnv(t))
	labels := []spec.Label{
		{Name: "pid", Size: 4, Decoders: []spec.Decoder{{Name: "uint"}}},
		{Name: "kind", Size: 1, Padding: 3, Decoders: []spec.Decoder{{Name: "uint"}, {Name: "static_map", StaticMap: map[string]string{"1": "one"}}}},
		{Name: "comm", Size: 8, Decoders: []spec.Decoder{{Name: "string"}, {Name: "regexp", Regexps: []string{"^b.*"}}}},
	}
	key := append(append(u32(42), 1, 0xee, 0xee, 0xee), []byte("bash\x00\x00\x00\x00")...)
	got, err := s.DecodeLabels(key, labels)
	require.NoError(t, err)
	assert.Equal(t, []string{"42", "one", "bash"}, got)

	other := append(append(u32(42), 1, 0, 0, 0), []byte("zsh\x00\x00\x00\x00\x00")...)
	_, err = s.DecodeLabels(other, labels)
	require.ErrorIs(t, err, ErrSkipLabelSet)

	_, err = s.DecodeLabels(key[:15], labels)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "error decoding labels: total size of key"), err.Error())
	assert.Contains(t, err.Error(), "is 15 bytes, but we have labels to decode 16")

	_, err = s.DecodeLabels(u32(1), []spec.Label{{Name: "x", Size: 4}})
	assert.EqualError(t, err, `error decoding label "x": no decoders set`)
	_, err = s.DecodeLabels(u32(1), []spec.Label{{Name: "x", Size: 4, Decoders: []spec.Decoder{{Name: "nope"}}}})
	assert.EqualError(t, err, `unknown decoder "nope"`)
	assert.False(t, errors.Is(err, ErrSkipLabelSet))
}
