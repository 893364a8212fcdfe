// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Helm values (deploy/helm) carry what the tested deployment
// (deploy/kustomization.yaml: TestKubernetesDeploy, TestKubeletDaemonSet)
// runs: the collector config whole, and the container's environment,
// resources, security context, host volumes and replicas. No cluster runs
// the chart here, so a setting changed in the manifests alone would ship
// untested in the values (it happened: the values' agent config had lost
// k8sattributes' extract list and the seq receiver's service name).
func TestHelmValuesFollowManifests(t *testing.T) {
	root := repoRoot(t)
	kust := readYAMLDocs(t, filepath.Join(root, "deploy", "kustomization.yaml"))[0]
	for _, c := range []struct{ kind, manifest, container string }{
		{"agent", "agent-daemonset.yaml", "agent"},
		{"gateway", "gateway-deployment.yaml", "gateway"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			values := readYAMLDocs(t, filepath.Join(root, "deploy", "helm", "values-"+c.kind+".yaml"))[0]
			config := readYAMLDocs(t, filepath.Join(root, "deploy", c.kind+".yaml"))[0]
			assert.Equal(t, config, values["alternateConfig"], "alternateConfig is deploy/%s.yaml", c.kind)

			var workload map[string]any
			for _, d := range readYAMLDocs(t, filepath.Join(root, "deploy", "kubernetes", c.manifest)) {
				if d["kind"] == "DaemonSet" || d["kind"] == "Deployment" {
					workload = d
				}
			}
			require.NotNil(t, workload, "%s: no DaemonSet or Deployment", c.manifest)
			spec := dig(t, workload, "spec").(map[string]any)
			pod := dig(t, workload, "spec", "template", "spec").(map[string]any)
			var container map[string]any
			for _, x := range pod["containers"].([]any) {
				if x.(map[string]any)["name"] == c.container {
					container = x.(map[string]any)
				}
			}
			require.NotNil(t, container, "%s: container %s", c.manifest, c.container)

			assert.Equal(t, container["resources"], values["resources"], "resources")
			assert.Equal(t, container["securityContext"], values["securityContext"], "securityContext")
			assert.ElementsMatch(t, container["env"], values["extraEnvs"], "extraEnvs are the container's env")
			// The config map is the chart's own; the host's volumes are ours.
			assert.ElementsMatch(t, without(pod["volumes"], "conf"), orEmpty(values["extraVolumes"]), "extraVolumes")
			assert.ElementsMatch(t, without(container["volumeMounts"], "conf"), orEmpty(values["extraVolumeMounts"]), "extraVolumeMounts")
			if hostPID, ok := pod["hostPID"]; ok {
				assert.Equal(t, hostPID, values["hostPID"], "hostPID")
			}
			if replicas, ok := spec["replicas"]; ok {
				assert.Equal(t, replicas, values["replicaCount"], "replicaCount")
			}
			assert.Equal(t, dig(t, kust, "images").([]any)[0].(map[string]any)["newTag"], dig(t, values, "image", "tag"), "image tag")
		})
	}
}

func readYAMLDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	docs := decodeYAMLDocs(t, string(b))
	require.NotEmpty(t, docs, path)
	return docs
}

func dig(t *testing.T, m map[string]any, keys ...string) any {
	t.Helper()
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		require.True(t, ok, "%v: not a mapping at %q", keys, k)
		v, ok = mm[k]
		require.True(t, ok, "%v: no %q", keys, k)
	}
	return v
}

// without returns the named entries of list but the one called name.
func without(list any, name string) []any {
	var out []any
	for _, x := range orEmpty(list) {
		if m, ok := x.(map[string]any); !ok || m["name"] != name {
			out = append(out, x)
		}
	}
	return out
}

func orEmpty(v any) []any {
	l, _ := v.([]any)
	return l
}
