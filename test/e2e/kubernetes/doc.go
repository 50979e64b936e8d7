// Package kubernetes is huitian's end-to-end test on a real Kubernetes
// control plane with kwok's fake GPU nodes: make e2e-kubernetes starts the
// cluster and runs it (see scripts/e2e-kubernetes.sh).
package kubernetes
