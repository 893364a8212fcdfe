// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package cgroups names the container and the Kubernetes pod of a cgroup v2
// path, and resolves the cgroup ids of BPF events (bpf_get_current_cgroup_id:
// the inode of the cgroup's directory in the v2 hierarchy) to paths.
//
// Parse knows the layouts of docker, containerd (CRI), CRI-O and podman
// under both the systemd and the cgroupfs cgroup drivers, and the kubelet's
// pod cgroups of every QoS class:
//
//	/system.slice/docker-<id>.scope                                 docker, systemd driver
//	/docker/<id>                                                    docker, cgroupfs driver
//	/kubepods.slice/kubepods-burstable.slice/
//	    kubepods-burstable-pod<uid_with_underscores>.slice/
//	    cri-containerd-<id>.scope                                   containerd, systemd driver
//	/kubepods/besteffort/pod<uid-with-dashes>/<id>                  containerd or CRI-O, cgroupfs driver
//	/kubepods.slice/kubepods-pod<uid>.slice/crio-<id>.scope         CRI-O (crio-conmon-<id>.scope: its monitor)
//	/machine.slice/libpod-<id>.scope, /libpod_parent/libpod-<id>    podman (libpod-conmon-<id>: its monitor)
//
// A bare 64-hex directory name under a pod names a container whose runtime
// the path does not tell (containerd and CRI-O both use it); Runtime is then
// empty. Paths of no known layout give only their path.
package cgroups

import (
	"strings"
)

// Runtime names, as container.runtime.name (semantic conventions v1.43.0).
const (
	RuntimeDocker     = "docker"
	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "cri-o"
	RuntimePodman     = "podman"
)

// Info is what a cgroup path tells about the processes in it. It is
// immutable once made: pointers to it are shared.
type Info struct {
	// Path is the cgroup v2 path, from the root of the hierarchy ("/" for
	// the root itself).
	Path string
	// Cgroup is Path as process.linux.cgroup writes it: the cgroup v2 line
	// of /proc/PID/cgroup, "0::" + Path.
	Cgroup string
	// ContainerID is the container's full id (64 lowercase hex digits), or
	// empty.
	ContainerID string
	// Runtime is the container runtime (RuntimeDocker, ...) when the path
	// names it, or empty.
	Runtime string
	// PodUID is the Kubernetes pod's uid, with dashes, or empty.
	PodUID string
	// Monitor: the cgroup is a runtime's per-container monitor (conmon of
	// CRI-O or podman), not the container; ContainerID names the container
	// it watches.
	Monitor bool
}

// InContainer reports whether the cgroup belongs to a container or a pod.
func (i *Info) InContainer() bool { return i != nil && (i.ContainerID != "" || i.PodUID != "") }

// Parse reads the container and the pod out of a cgroup v2 path. The
// innermost container id wins (a container nested in a pod, or a runtime
// nested in a container, is named by the deepest cgroup).
func Parse(path string) Info {
	info := Info{Path: path, Cgroup: "0::" + path}
	kubepods := false // under the kubelet's kubepods cgroup: pod<uid> names a pod
	for rest := path; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		if seg == "" {
			break
		}
		if seg == "kubepods" || strings.HasPrefix(seg, "kubepods") && strings.HasSuffix(seg, ".slice") {
			kubepods = true
		}
		if uid, ok := podUID(seg); ok && kubepods {
			info.PodUID = uid
			continue
		}
		if id, rt, mon, ok := containerSegment(seg); ok {
			info.ContainerID, info.Runtime, info.Monitor = id, rt, mon
			continue
		}
		// /docker/<id>: the cgroupfs driver's docker layout.
		if seg == "docker" && isHex64(firstSegment(rest)) {
			info.ContainerID, info.Runtime, info.Monitor = firstSegment(rest), RuntimeDocker, false
			rest = rest[len(info.ContainerID):]
			continue
		}
		// /kubepods/<qos>/pod<uid>/<id>: the cgroupfs driver's CRI layout.
		if info.PodUID != "" && isHex64(seg) {
			info.ContainerID, info.Runtime, info.Monitor = seg, "", false
		}
	}
	return info
}

func firstSegment(s string) string {
	s = strings.TrimLeft(s, "/")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i]
	}
	return s
}

// containerSegment parses the systemd driver's scopes and podman's
// cgroupfs directories: docker-<id>.scope, cri-containerd-<id>.scope,
// crio-<id>.scope, crio-conmon-<id>.scope, libpod-<id>[.scope],
// libpod-conmon-<id>[.scope].
func containerSegment(seg string) (id, runtime string, monitor, ok bool) {
	name := strings.TrimSuffix(seg, ".scope")
	for _, p := range containerPrefixes {
		if rest, found := strings.CutPrefix(name, p.prefix); found && isHex64(rest) {
			return rest, p.runtime, p.monitor, true
		}
	}
	return "", "", false, false
}

var containerPrefixes = []struct {
	prefix, runtime string
	monitor         bool
}{
	{"docker-", RuntimeDocker, false},
	{"cri-containerd-", RuntimeContainerd, false},
	{"crio-conmon-", RuntimeCRIO, true},
	{"crio-", RuntimeCRIO, false},
	{"libpod-conmon-", RuntimePodman, true},
	{"libpod-", RuntimePodman, false},
}

// podUID parses the kubelet's pod cgroups: pod<uid-with-dashes> (cgroupfs
// driver) and kubepods[-<qos>]-pod<uid_with_underscores>.slice (systemd
// driver), and returns the uid with dashes.
func podUID(seg string) (string, bool) {
	var uid string
	if strings.HasSuffix(seg, ".slice") {
		name := strings.TrimSuffix(seg, ".slice")
		i := strings.LastIndex(name, "-pod")
		if i < 0 || !strings.HasPrefix(name, "kubepods") {
			return "", false
		}
		uid = strings.ReplaceAll(name[i+len("-pod"):], "_", "-")
	} else if rest, ok := strings.CutPrefix(seg, "pod"); ok {
		uid = rest
	} else {
		return "", false
	}
	if !isUID(uid) {
		return "", false
	}
	return strings.ToLower(uid), true
}

// isUID: 8-4-4-4-12 hex digits.
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHexDigit(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHexDigit(s[i]) || 'A' <= s[i] && s[i] <= 'F' {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
