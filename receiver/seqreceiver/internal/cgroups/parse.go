// Package cgroups names the container and the Kubernetes pod of a cgroup v2
// path, and resolves the cgroup ids of BPF events (bpf_get_current_cgroup_id:
// the inode of the cgroup's directory in the v2 hierarchy) to paths.
//
// Parse knows the layouts of docker, containerd (CRI and its own
// namespaces), CRI-O and podman under both the systemd and the cgroupfs
// cgroup drivers, and the kubelet's pod cgroups of every QoS class, each
// **at the root of the hierarchy**, where only root makes cgroups:
//
//	/system.slice/docker-<id>.scope                                 docker, systemd driver
//	/docker/<id>                                                    docker, cgroupfs driver
//	/kubepods.slice/kubepods-burstable.slice/
//	    kubepods-burstable-pod<uid_with_underscores>.slice/
//	    cri-containerd-<id>.scope                                   containerd, systemd driver
//	/kubepods/besteffort/pod<uid-with-dashes>/<id>                  containerd or CRI-O, cgroupfs driver
//	/kubepods.slice/kubepods-pod<uid>.slice/crio-<id>.scope         CRI-O (crio-conmon-<id>.scope: its monitor)
//	/machine.slice/libpod-<id>.scope, /libpod_parent/libpod-<id>    podman (libpod-conmon-<id>: its monitor)
//	/system.slice/nerdctl-<id>.scope, /default/<id>, /k8s.io/<id>   containerd's own (nerdctl, ctr)
//
// A bare 64-hex directory name under a pod names a container whose runtime
// the path does not tell (containerd and CRI-O both use it); Runtime is then
// empty.
//
// Identity is anchored: the same names anywhere else give no container.id
// and no k8s.pod.uid, because anyone with a cgroup subtree of their own
// (a systemd user session's user@<uid>.service, a service or a container
// with delegation) can make them and borrow a victim's identity. Below a
// container's cgroup, what the container made is still that container (a
// runtime nested in a container is reported as the outer container). A
// container in a user's delegated subtree (rootless podman, docker, nerdctl)
// is reported by DelegatedID, never as container.id or with a pod. Untrusted
// says why a path that names a container or pod was not taken as one.
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

// Why a container or pod named by a path is not the process's identity
// (Info.Untrusted).
const (
	// UntrustedUnanchored: the name is not under a runtime's root (a
	// prefix that anyone with a delegated subtree could have made), or the
	// collector cannot place the path in the hierarchy (a cgroup
	// namespace's subtree).
	UntrustedUnanchored = "unanchored"
	// UntrustedNested: the name is below another container's cgroup,
	// which that container may have made; the outer container is the
	// identity.
	UntrustedNested = "nested"
	// UntrustedDelegated: a container in a user's delegated subtree
	// (/user.slice/user-<uid>.slice/user@<uid>.service/...), reported by
	// DelegatedID only.
	UntrustedDelegated = "delegated"
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
	// empty; only from a path under a runtime's root.
	ContainerID string
	// Runtime is the container runtime (RuntimeDocker, ...) when the path
	// names it, or empty.
	Runtime string
	// PodUID is the Kubernetes pod's uid, with dashes, or empty; only from
	// a path under the kubelet's kubepods cgroup at the root.
	PodUID string
	// Monitor: the cgroup is a runtime's per-container monitor (conmon of
	// CRI-O or podman), not the container; ContainerID (or DelegatedID)
	// names the container it watches.
	Monitor bool
	// DelegatedID is the id of a container in a user's delegated subtree
	// (rootless podman, ...): chosen by that user, so never ContainerID.
	DelegatedID string
	// Untrusted says why a container or pod the path names was not taken
	// (UntrustedUnanchored, UntrustedNested, UntrustedDelegated), or is
	// empty.
	Untrusted string
}

// InContainer reports whether the cgroup belongs to a container or a pod.
func (i *Info) InContainer() bool {
	return i != nil && (i.ContainerID != "" || i.PodUID != "" || i.DelegatedID != "")
}

// Parse reads the container and the pod out of a cgroup v2 path from the
// root of the hierarchy. Only the layouts above, starting at the root, name
// them; the outermost container wins.
func Parse(path string) Info {
	info := Info{Path: path, Cgroup: "0::" + path}
	segs := segments(path)
	n := anchored(segs, &info)
	if rest := segs[n:]; namesContainer(rest) {
		switch {
		case n > 0:
			info.Untrusted = UntrustedNested
		case delegatedTo(segs) > 0:
			info.Untrusted = UntrustedDelegated
			for _, seg := range segs[delegatedTo(segs):] {
				if id, rt, mon, ok := containerSegment(seg); ok {
					info.DelegatedID, info.Runtime, info.Monitor = id, rt, mon
					break
				}
			}
		default:
			info.Untrusted = UntrustedUnanchored
		}
	}
	return info
}

// ParseUnanchored is Parse for a path that cannot be placed in the
// hierarchy (relative to a cgroup namespace's root the collector does not
// know): no identity, and Untrusted when it names a container or pod.
func ParseUnanchored(path string) Info {
	info := Info{Path: path, Cgroup: "0::" + path}
	if namesContainer(segments(path)) {
		info.Untrusted = UntrustedUnanchored
	}
	return info
}

// segments splits a path at its slashes, leaving out empty segments.
func segments(path string) []string {
	var segs []string
	for rest := path; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
}

// anchored matches the runtimes' layouts at the root, fills info and
// returns how many segments the identity took (0: none).
func anchored(segs []string, info *Info) int {
	at := func(i int) string {
		if i < len(segs) {
			return segs[i]
		}
		return ""
	}
	container := func(i int, bare bool) int {
		seg := at(i)
		if id, rt, mon, ok := containerSegment(seg); ok {
			info.ContainerID, info.Runtime, info.Monitor = id, rt, mon
			return i + 1
		}
		if bare && isHex64(seg) {
			info.ContainerID = seg
			return i + 1
		}
		return i
	}
	for _, seg := range segs {
		if seg == "." || seg == ".." {
			return 0 // not a path from the root
		}
	}
	switch at(0) {
	case "kubepods.slice": // the kubelet, systemd driver
		i, parent := 1, "kubepods"
		if q := at(1); q == "kubepods-besteffort.slice" || q == "kubepods-burstable.slice" {
			i, parent = 2, strings.TrimSuffix(q, ".slice")
		}
		name, ok := strings.CutSuffix(at(i), ".slice")
		if !ok {
			return 0
		}
		rest, ok := strings.CutPrefix(name, parent+"-pod")
		if !ok || !isUID(strings.ReplaceAll(rest, "_", "-")) || strings.Contains(rest, "-") {
			return 0
		}
		info.PodUID = strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
		return container(i+1, false)
	case "kubepods": // the kubelet, cgroupfs driver
		i := 1
		if q := at(1); q == "besteffort" || q == "burstable" {
			i = 2
		}
		rest, ok := strings.CutPrefix(at(i), "pod")
		if !ok || !isUID(rest) {
			return 0
		}
		info.PodUID = strings.ToLower(rest)
		return container(i+1, true)
	case "system.slice": // docker and nerdctl, systemd driver
		seg := strings.TrimSuffix(at(1), ".scope")
		if id, ok := strings.CutPrefix(seg, "docker-"); ok && isHex64(id) && strings.HasSuffix(at(1), ".scope") {
			info.ContainerID, info.Runtime = id, RuntimeDocker
			return 2
		}
		if id, ok := strings.CutPrefix(seg, "nerdctl-"); ok && isHex64(id) && strings.HasSuffix(at(1), ".scope") {
			info.ContainerID, info.Runtime = id, RuntimeContainerd
			return 2
		}
	case "machine.slice": // podman, systemd driver (a podman pod: machine-libpod_pod_<id>.slice)
		i := 1
		if p, ok := strings.CutPrefix(at(1), "machine-libpod_pod_"); ok {
			if p, ok = strings.CutSuffix(p, ".slice"); !ok || !isHex64(p) {
				return 0
			}
			i = 2
		}
		if strings.HasPrefix(at(i), "libpod-") && strings.HasSuffix(at(i), ".scope") {
			return zeroIfSame(container(i, false), i)
		}
	case "libpod_parent": // podman, cgroupfs driver (a pod: its id's directory)
		i := 1
		if isHex64(at(1)) {
			i = 2
		}
		if strings.HasPrefix(at(i), "libpod-") {
			return zeroIfSame(container(i, false), i)
		}
	case "docker": // docker, cgroupfs driver
		if isHex64(at(1)) {
			info.ContainerID, info.Runtime = at(1), RuntimeDocker
			return 2
		}
	case "default", "k8s.io": // containerd's namespaces, cgroupfs driver (ctr, nerdctl)
		if isHex64(at(1)) {
			info.ContainerID, info.Runtime = at(1), RuntimeContainerd
			return 2
		}
	}
	return 0
}

func zeroIfSame(n, i int) int {
	if n == i {
		return 0
	}
	return n
}

// namesContainer reports whether a segment names a container or a pod as a
// runtime or the kubelet would.
func namesContainer(segs []string) bool {
	for _, seg := range segs {
		if _, _, _, ok := containerSegment(seg); ok {
			return true
		}
		if _, ok := podUID(seg); ok || isHex64(seg) {
			return true
		}
		if id, ok := strings.CutPrefix(strings.TrimSuffix(seg, ".scope"), "nerdctl-"); ok && isHex64(id) {
			return true
		}
	}
	return false
}

// delegatedTo returns how many segments the user's delegated root takes
// (/user.slice/user-<uid>.slice/user@<uid>.service: 3), or 0 when the path
// is not under one.
func delegatedTo(segs []string) int {
	if len(segs) < 3 || segs[0] != "user.slice" {
		return 0
	}
	u, ok := strings.CutPrefix(segs[1], "user-")
	if !ok {
		return 0
	}
	u, ok = strings.CutSuffix(u, ".slice")
	if !ok || u == "" || segs[2] != "user@"+u+".service" {
		return 0
	}
	return 3
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
