// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package cgroups

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	id1  = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	id2  = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	uid  = "4f2e8a1c-3b5d-4e6f-9a7b-8c9d0e1f2a3b"
	uidU = "4f2e8a1c_3b5d_4e6f_9a7b_8c9d0e1f2a3b"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, path       string
		id, runtime, pod string
		monitor          bool
	}{
		// docker
		{"docker systemd", "/system.slice/docker-" + id1 + ".scope", id1, RuntimeDocker, "", false},
		{"docker cgroupfs", "/docker/" + id1, id1, RuntimeDocker, "", false},
		{"docker cgroupfs child cgroup", "/docker/" + id1 + "/init", id1, RuntimeDocker, "", false},
		// A runtime nested in a container is that container: the outer one.
		{"docker in docker", "/docker/" + id1 + "/docker/" + id2, id1, RuntimeDocker, "", false},
		{"docker under kubepods systemd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/docker-" + id1 + ".scope", id1, RuntimeDocker, uid, false},
		// containerd
		{"containerd systemd besteffort", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", id1, RuntimeContainerd, uid, false},
		{"containerd systemd burstable", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", id1, RuntimeContainerd, uid, false},
		{"containerd systemd guaranteed", "/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + id1 + ".scope", id1, RuntimeContainerd, uid, false},
		{"cri cgroupfs besteffort", "/kubepods/besteffort/pod" + uid + "/" + id1, id1, "", uid, false},
		{"cri cgroupfs burstable", "/kubepods/burstable/pod" + uid + "/" + id1, id1, "", uid, false},
		{"cri cgroupfs guaranteed", "/kubepods/pod" + uid + "/" + id1, id1, "", uid, false},
		{"cri cgroupfs upper-case uid", "/kubepods/pod" + strings.ToUpper(uid) + "/" + id1, id1, "", uid, false},
		// CRI-O
		{"crio systemd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-" + id1 + ".scope", id1, RuntimeCRIO, uid, false},
		{"crio conmon systemd", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-conmon-" + id1 + ".scope", id1, RuntimeCRIO, uid, true},
		{"crio cgroupfs", "/kubepods/besteffort/pod" + uid + "/crio-" + id1, id1, RuntimeCRIO, uid, false},
		{"crio conmon cgroupfs", "/kubepods/besteffort/pod" + uid + "/crio-conmon-" + id1, id1, RuntimeCRIO, uid, true},
		{"crio container subcgroup", "/kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + id1 + ".scope/container", id1, RuntimeCRIO, uid, false},
		// podman
		{"podman systemd", "/machine.slice/libpod-" + id1 + ".scope", id1, RuntimePodman, "", false},
		{"podman systemd container subcgroup", "/machine.slice/libpod-" + id1 + ".scope/container", id1, RuntimePodman, "", false},
		{"podman conmon systemd", "/machine.slice/libpod-conmon-" + id1 + ".scope", id1, RuntimePodman, "", true},
		{"podman cgroupfs", "/libpod_parent/libpod-" + id1, id1, RuntimePodman, "", false},
		{"podman conmon cgroupfs", "/libpod_parent/libpod-conmon-" + id1, id1, RuntimePodman, "", true},
		{"podman pod", "/machine.slice/machine-libpod_pod_" + id2 + ".slice/libpod-" + id1 + ".scope", id1, RuntimePodman, "", false},
		{"podman under kubepods", "/kubepods/besteffort/pod" + uid + "/libpod-" + id1, id1, RuntimePodman, uid, false},
		{"podman pod cgroupfs", "/libpod_parent/" + id2 + "/libpod-" + id1, id1, RuntimePodman, "", false},
		// containerd's own namespaces (ctr, nerdctl)
		{"nerdctl systemd", "/system.slice/nerdctl-" + id1 + ".scope", id1, RuntimeContainerd, "", false},
		{"containerd default namespace", "/default/" + id1, id1, RuntimeContainerd, "", false},
		{"containerd k8s.io namespace", "/k8s.io/" + id1, id1, RuntimeContainerd, "", false},
		// a user's delegated subtree: rootless containers by DelegatedID
		{"rootless podman", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id1 + ".scope", "", RuntimePodman, "", false},
		{"rootless podman conmon", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-conmon-" + id1 + ".scope", "", RuntimePodman, "", true},
		{"rootless docker", "/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" + id1 + ".scope", "", RuntimeDocker, "", false},
		{"pod in a user's subtree", "/user.slice/user-1000.slice/user@1000.service/kubepods/pod" + uid + "/" + id1, "", "", "", false},
		// pods without a container cgroup
		{"pod cgroup cgroupfs", "/kubepods/burstable/pod" + uid, "", "", uid, false},
		{"pod cgroup systemd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice", "", "", uid, false},
		// not containers
		{"root", "/", "", "", "", false},
		{"empty", "", "", "", "", false},
		{"user session", "/user.slice/user-1000.slice/session-3.scope", "", "", "", false},
		{"system service", "/system.slice/ssh.service", "", "", "", false},
		{"kubepods qos only", "/kubepods/besteffort", "", "", "", false},
		{"pod outside kubepods", "/pod" + uid + "/" + id1, "", "", "", false},
		{"bare hex outside a pod", "/" + id1, "", "", "", false},
		{"short id", "/system.slice/docker-0123456789ab.scope", "", "", "", false},
		{"upper-case id", "/system.slice/docker-" + strings.ToUpper(id1) + ".scope", "", "", "", false},
		{"docker service", "/system.slice/docker.service", "", "", "", false},
		{"bad uid", "/kubepods/besteffort/pod1234/" + id1, "", "", "", false},
		{"slice not kubepods", "/foo.slice/foo-pod" + uidU + ".slice", "", "", "", false},
		{"docker dir not hex", "/docker/buildkit", "", "", "", false},
		{"double slashes", "//docker//" + id1, id1, RuntimeDocker, "", false},
		{"dot dot", "/../docker/" + id1, "", "", "", false},
		{"qos mismatch", "/kubepods.slice/kubepods-besteffort.slice/kubepods-burstable-pod" + uidU + ".slice", "", "", "", false},
		{"pod slice with dashes", "/kubepods.slice/kubepods-pod" + uid + ".slice", "", "", "", false},
		{"docker scope not at the root", "/system.slice/foo.service/docker-" + id1 + ".scope", "", "", "", false},
		{"user slice of another user", "/user.slice/user-1000.slice/user@1001.service/libpod-" + id1 + ".scope", "", "", "", false},
	}
	untrusted := map[string]string{
		"docker in docker":             UntrustedNested,
		"rootless podman":              UntrustedDelegated,
		"rootless podman conmon":       UntrustedDelegated,
		"rootless docker":              UntrustedDelegated,
		"pod in a user's subtree":      UntrustedDelegated,
		"pod outside kubepods":         UntrustedUnanchored,
		"bare hex outside a pod":       UntrustedUnanchored,
		"bad uid":                      UntrustedUnanchored,
		"dot dot":                      UntrustedUnanchored,
		"qos mismatch":                 UntrustedUnanchored,
		"pod slice with dashes":        UntrustedUnanchored,
		"docker scope not at the root": UntrustedUnanchored,
		"user slice of another user":   UntrustedUnanchored,
		"short id":                     "",
	}
	delegated := map[string]string{"rootless podman": id1, "rootless podman conmon": id1, "rootless docker": id1}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.path)
			assert.Equal(t, Info{
				Path: tc.path, Cgroup: "0::" + tc.path, ContainerID: tc.id, Runtime: tc.runtime, PodUID: tc.pod, Monitor: tc.monitor,
				DelegatedID: delegated[tc.name], Untrusted: untrusted[tc.name],
			}, got)
			assert.Equal(t, tc.id != "" || tc.pod != "" || delegated[tc.name] != "", got.InContainer())
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("/kubepods/besteffort/pod" + uid + "/" + id1)
	f.Add("/system.slice/docker-" + id1 + ".scope")
	f.Add("/docker/" + id1)
	f.Add("/kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + id1 + ".scope")
	f.Fuzz(func(t *testing.T, path string) {
		info := Parse(path)
		if info.ContainerID != "" && !isHex64(info.ContainerID) {
			t.Fatalf("container id %q", info.ContainerID)
		}
		if info.PodUID != "" && (!isUID(info.PodUID) || strings.ToLower(info.PodUID) != info.PodUID) {
			t.Fatalf("pod uid %q", info.PodUID)
		}
		if info.ContainerID != "" && !strings.Contains(path, info.ContainerID) {
			t.Fatalf("container id %q not in %q", info.ContainerID, path)
		}
		// Under a prefix a user or a service may own, nothing is anyone's
		// identity.
		for _, prefix := range []string{"/user.slice/user-1000.slice/user@1000.service/", "/system.slice/x.service/", "/x/"} {
			if got := Parse(prefix + path); got.ContainerID != "" || got.PodUID != "" {
				t.Fatalf("%q: container %q pod %q", prefix+path, got.ContainerID, got.PodUID)
			}
		}
	})
}
