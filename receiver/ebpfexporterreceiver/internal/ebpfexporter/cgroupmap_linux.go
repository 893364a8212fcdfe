// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package ebpfexporter

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/cilium/ebpf"

	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/decoder"
	"github.com/otelcol-seq/otelcol-seq/receiver/ebpfexporterreceiver/internal/spec"
)

// cgroupIDMapSync keeps a cgroup_id_map filled: the id of every cgroup
// whose path matches one of the regexps maps to 1. ebpf_exporter follows
// cgroup creation with fanotify; here the tree is walked at load and at
// every collection.
type cgroupIDMapSync struct {
	m        *ebpf.Map
	typ      spec.CgroupIDMapType
	regexps  []*regexp.Regexp
	resolver *decoder.CgroupResolver
	present  map[uint64]bool // ids written to a hash map
}

func newCgroupIDMapSync(c spec.CgroupIDMap, m *ebpf.Map) (*cgroupIDMapSync, error) {
	if m == nil {
		return nil, fmt.Errorf("no map %q", c.Name)
	}
	s := &cgroupIDMapSync{m: m, typ: c.Type, resolver: decoder.NewCgroupResolver("/sys/fs/cgroup"), present: map[uint64]bool{}}
	if s.typ == "" {
		s.typ = spec.CgroupIDMapHashType
	}
	for _, expr := range c.Regexps {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("error compiling regexp %q: %w", expr, err)
		}
		s.regexps = append(s.regexps, re)
	}
	return s, nil
}

func (s *cgroupIDMapSync) match(path string) bool {
	for _, re := range s.regexps {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

func (lc *loadedConfig) syncCgroupIDMap() error {
	if lc.cgroups == nil {
		return nil
	}
	return lc.cgroups.sync()
}

func (s *cgroupIDMapSync) sync() error {
	var errs []error
	seen := map[uint64]bool{}
	one := uint64(1)
	for id, path := range s.resolver.All() {
		if !s.match(path) {
			continue
		}
		seen[id] = true
		switch s.typ {
		case spec.CgroupIDMapHashType:
			if s.present[id] {
				continue
			}
			if err := s.m.Update(id, one, ebpf.UpdateAny); err != nil {
				errs = append(errs, fmt.Errorf("updating cgroup %s: %w", path, err))
				continue
			}
			s.present[id] = true
		case spec.CgroupIDMapCgrpStorageType:
			// cgroup storage maps are keyed by an open cgroup fd.
			f, err := os.Open(path)
			if err != nil {
				continue // removed meanwhile
			}
			if err := s.m.Update(uint32(f.Fd()), one, ebpf.UpdateAny); err != nil {
				errs = append(errs, fmt.Errorf("updating cgroup %s: %w", path, err))
			}
			f.Close()
		}
	}
	if s.typ == spec.CgroupIDMapHashType {
		for id := range s.present {
			if seen[id] {
				continue
			}
			if err := s.m.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				errs = append(errs, err)
			}
			delete(s.present, id)
		}
	}
	return errors.Join(errs...)
}
