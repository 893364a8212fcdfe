// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package decoder

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// majorminor: 4-byte new_encode_dev() device number to the name
// /proc/partitions gives it.
func (s *Set) decodeMajorMinor(in []byte, _ spec.Decoder) ([]byte, error) {
	if len(in) < 4 {
		return nil, fmt.Errorf("majorminor needs 4 bytes, got %d", len(in))
	}
	num := uint64(hostOrder.Uint32(in[0:4]))
	if name, ok := s.devnames[num]; ok {
		return name, nil
	}
	major, minor := devMajor(num), devMinor(num)
	f, err := os.Open(s.env.PartitionsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := majorMinorToName(major, minor, f)
	if name == "" {
		return fmt.Appendf(nil, "unknown:%d:%d", major, minor), nil
	}
	s.devnames[num] = []byte(name)
	return []byte(name), nil
}

// devMajor and devMinor decode a dev_t the way glibc (and x/sys/unix) do.
func devMajor(dev uint64) uint32 {
	return uint32(((dev >> 8) & 0xfff) | ((dev >> 32) &^ 0xfff))
}

func devMinor(dev uint64) uint32 {
	return uint32((dev & 0xff) | ((dev >> 12) &^ 0xff))
}

func majorMinorToName(major, minor uint32, r io.Reader) string {
	ma, mi := strconv.Itoa(int(major)), strconv.Itoa(int(minor))
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue
		}
		if f[0] == ma && f[1] == mi {
			return f[3]
		}
	}
	return ""
}

// kallsyms resolves kernel addresses from /proc/kallsyms, loaded on first
// use and re-read (at most every kallsymsRefresh) when an address is not
// found.
type kallsyms struct {
	mu      sync.Mutex
	path    string
	addrs   []ksymAddr
	found   map[uint64]string
	loaded  time.Time
	loadErr error
}

type ksymAddr struct {
	ptr uint64
	sym string
}

const kallsymsRefresh = 10 * time.Second

func newKallsyms(path string) *kallsyms {
	return &kallsyms{path: path, found: map[uint64]string{}}
}

func (k *kallsyms) load() error {
	f, err := os.Open(k.path)
	if err != nil {
		return fmt.Errorf("error opening kallsyms at %q: %v", k.path, err)
	}
	defer f.Close()
	var addrs []ksymAddr
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// "ffffffff81000000 T _stext" or "... t sym\t[module]": like
		// ebpf_exporter, split on spaces and keep the third field whole.
		parts := strings.Split(sc.Text(), " ")
		if len(parts) < 3 {
			continue
		}
		ptr, err := strconv.ParseUint(parts[0], 16, 64)
		if err != nil {
			return fmt.Errorf("error parsing kallsyms addr %q: %v", parts[0], err)
		}
		addrs = append(addrs, ksymAddr{ptr: ptr, sym: parts[2]})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("error scanning kallsyms from %q: %v", k.path, err)
	}
	sort.SliceStable(addrs, func(i, j int) bool { return addrs[i].ptr < addrs[j].ptr })
	k.addrs = addrs
	k.found = map[uint64]string{}
	return nil
}

// ensure loads the table the first time, and again on a miss when the last
// load is older than kallsymsRefresh. It reports whether it re-read.
func (k *kallsyms) ensure(miss bool) (bool, error) {
	if !k.loaded.IsZero() && (!miss || time.Since(k.loaded) < kallsymsRefresh) {
		return false, k.loadErr
	}
	k.loadErr = k.load()
	k.loaded = time.Now()
	return true, k.loadErr
}

// before returns the last symbol at or below ptr ("" if none).
func (k *kallsyms) before(ptr uint64) (ksymAddr, bool) {
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i].ptr > ptr })
	if i == 0 {
		return ksymAddr{}, false
	}
	return k.addrs[i-1], true
}

// sym returns the symbol starting exactly at ptr, or "".
func (k *kallsyms) sym(ptr uint64) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.ensure(false); err != nil {
		return "", err
	}
	if s, ok := k.found[ptr]; ok {
		return s, nil
	}
	for range 2 {
		if a, ok := k.before(ptr); ok && a.ptr == ptr {
			k.found[ptr] = a.sym
			return a.sym, nil
		}
		if reread, err := k.ensure(true); err != nil || !reread {
			return "", err
		}
	}
	return "", nil
}

// stack returns the symbol each frame falls in ("" below every symbol).
func (k *kallsyms) stack(ptrs []uint64) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, err := k.ensure(false); err != nil {
		return nil, err
	}
	out := make([]string, len(ptrs))
	for range 2 {
		complete := true
		for i, p := range ptrs {
			a, ok := k.before(p)
			out[i] = a.sym
			if !ok {
				complete = false
			}
		}
		if complete {
			break
		}
		if reread, err := k.ensure(true); err != nil || !reread {
			return out, err
		}
	}
	return out, nil
}

// pciDB is the part of pci.ids the pci_* decoders read; nil maps (a
// missing file) make them print "missing pci.ids db" as ebpf_exporter does.
type pciDB struct {
	once     sync.Once
	path     string
	present  bool
	vendors  map[string]string    // "8086" -> name
	products map[string]string    // "80861000" -> name
	classes  map[string]*pciClass // "02" -> class
}

type pciClass struct {
	name       string
	subclasses map[string]string // "00" -> name
}

const missingPCIIDsText = "missing pci.ids db"

func newPCIDB(path string) *pciDB { return &pciDB{path: path} }

func (p *pciDB) get() *pciDB {
	p.once.Do(func() {
		f, err := os.Open(p.path)
		if err != nil {
			return
		}
		defer f.Close()
		p.parse(f)
		p.present = true
	})
	if !p.present {
		return nil
	}
	return p
}

// parse reads the pci.ids format: vendor lines "vvvv  name", device lines
// "\tdddd  name", subsystem lines "\t\t...", then class lines "C cc  name",
// subclass lines "\tss  name" and prog-if lines "\t\tpp  name".
func (p *pciDB) parse(r io.Reader) {
	p.vendors, p.products, p.classes = map[string]string{}, map[string]string{}, map[string]*pciClass{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var vendor string
	var class *pciClass
	inClasses := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		tabs := len(line) - len(strings.TrimLeft(line, "\t"))
		body := line[tabs:]
		id, name, ok := strings.Cut(body, "  ")
		switch {
		case tabs == 0 && strings.HasPrefix(line, "C "):
			inClasses = true
			id, name, ok = strings.Cut(line[2:], "  ")
			if !ok {
				class = nil
				continue
			}
			class = &pciClass{name: name, subclasses: map[string]string{}}
			p.classes[strings.ToLower(id)] = class
		case tabs == 0 && len(line) > 2 && line[1] == ' ':
			// Another section ("D ", "I ", ...) of the file.
			inClasses, class, vendor = true, nil, ""
		case tabs == 0:
			if !ok {
				continue
			}
			inClasses, class = false, nil
			vendor = strings.ToLower(id)
			p.vendors[vendor] = name
		case tabs == 1 && ok && !inClasses && vendor != "":
			p.products[vendor+strings.ToLower(id)] = name
		case tabs == 1 && ok && inClasses && class != nil:
			class.subclasses[strings.ToLower(id)] = name
		}
	}
}

// pciLookup decodes a decimal id, formats it as hex of the given width and
// looks it up in pci.ids, printing what ebpf_exporter prints when the id or
// the database is missing.
func (s *Set) pciLookup(in []byte, format, what string, lookup func(db *pciDB, key string) (string, bool)) ([]byte, error) {
	db := s.pci.get()
	if db == nil {
		return []byte(missingPCIIDsText), nil
	}
	num, err := strconv.Atoi(string(in))
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf(format, num)
	if v, ok := lookup(db, key); ok {
		return []byte(v), nil
	}
	return []byte("unknown pci " + what + ": 0x" + key), nil
}

func (s *Set) decodePCIVendor(in []byte, _ spec.Decoder) ([]byte, error) {
	return s.pciLookup(in, "%02x", "vendor", func(db *pciDB, k string) (string, bool) { v, ok := db.vendors[k]; return v, ok })
}

func (s *Set) decodePCIDevice(in []byte, _ spec.Decoder) ([]byte, error) {
	return s.pciLookup(in, "%04x", "device", func(db *pciDB, k string) (string, bool) { v, ok := db.products[k]; return v, ok })
}

func (s *Set) decodePCIClass(in []byte, _ spec.Decoder) ([]byte, error) {
	return s.pciLookup(in, "%02x", "class", func(db *pciDB, k string) (string, bool) {
		if c, ok := db.classes[k]; ok {
			return c.name, true
		}
		return "", false
	})
}

func (s *Set) decodePCISubclass(in []byte, _ spec.Decoder) ([]byte, error) {
	db := s.pci.get()
	if db == nil {
		return []byte(missingPCIIDsText), nil
	}
	num, err := strconv.Atoi(string(in))
	if err != nil {
		return nil, err
	}
	classID := fmt.Sprintf("%02x", num>>8)
	if c, ok := db.classes[classID]; ok {
		subID := fmt.Sprintf("%02x", num&0xff)
		if name, ok := c.subclasses[subID]; ok {
			return []byte(name), nil
		}
		return fmt.Appendf(nil, "unknown pci subclass: 0x%s (class 0x%s)", subID, classID), nil
	}
	return []byte("unknown pci class: 0x" + classID), nil
}
