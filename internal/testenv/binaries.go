package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Versions of the local control plane. They must match tools/kube/go.mod and
// tools/kwok/go.mod (a test checks), and they key the binary cache, so a version change
// builds afresh and never mixes binaries.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.0"
	KwokVersion       = "v0.8.0"
)

// EnvBinDir names a directory that holds (or will receive) the control-plane binaries,
// instead of the user cache.
const EnvBinDir = "OPM_CONTROLPLANE_DIR"

// EnvToolsDir names the checkout's tools directory when it cannot be found from the
// working directory.
const EnvToolsDir = "OPM_TOOLS_DIR"

// Binary names in a binary directory.
const (
	binEtcd       = "etcd"
	binAPIServer  = "kube-apiserver"
	binController = "kube-controller-manager"
	binScheduler  = "kube-scheduler"
	binKwok       = "kwok"
	kwokStages    = "kwok-stages.yaml"
	// BinKubectl is built too, so people and tests look at the local cluster with the
	// kubectl of the same version.
	BinKubectl = "kubectl"
)

var allBinaries = []string{binEtcd, binAPIServer, binController, binScheduler, BinKubectl, binKwok, kwokStages}

// BinDir is where the control-plane binaries live: $OPM_CONTROLPLANE_DIR, or a directory
// of the user cache keyed by the versions above. It is outside any checkout, so clean
// clones and CI on the same machine reuse one build.
func BinDir() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return filepath.Abs(dir)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory (set %s instead): %w", EnvBinDir, err)
	}
	key := fmt.Sprintf("kubernetes-%s_etcd-%s_kwok-%s", KubernetesVersion, EtcdVersion, KwokVersion)
	return filepath.Join(cache, "operator-manager", "controlplane", key), nil
}

// EnsureBinaries returns the binary directory, building what is missing first. Building
// compiles Kubernetes from source through the Go module proxy, which takes minutes, so it
// says what it does on progress. Concurrent callers (parallel test binaries) wait on a
// file lock instead of building twice.
func EnsureBinaries(ctx context.Context, progress io.Writer) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	if missing(dir) == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if missing(dir) == nil { // built by another process while we waited
		return dir, nil
	}
	tools, err := findToolsDir()
	if err != nil {
		return "", fmt.Errorf("control-plane binaries missing in %s (%v) and cannot be built: %w", dir, missing(dir), err)
	}
	fmt.Fprintf(progress, "operator-manager: building the local control plane from source through the Go module proxy\n"+
		"  kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (Kubernetes %s), etcd %s, kwok %s\n"+
		"  into %s\n"+
		"  This happens once per version: compiling Kubernetes takes about 10 minutes on 2 cores\n"+
		"  (more with a cold module cache); later starts reuse the binaries at once.\n",
		KubernetesVersion, EtcdVersion, KwokVersion, dir)
	if err := build(ctx, tools, dir, progress); err != nil {
		return "", err
	}
	if m := missing(dir); m != nil {
		return "", fmt.Errorf("build finished but %v are missing from %s", m, dir)
	}
	return dir, nil
}

func missing(dir string) []string {
	var out []string
	for _, b := range allBinaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Size() == 0 {
			out = append(out, b)
		}
	}
	return out
}

func build(ctx context.Context, tools, dir string, progress io.Writer) error {
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	const v = "k8s.io/component-base/version"
	// Stamp the version, or /version reports v0.0.0 and minKubeVersion checks cannot work.
	ldflags := strings.Join([]string{"-s", "-w",
		"-X", v + ".gitVersion=" + KubernetesVersion,
		"-X", v + ".gitMajor=" + strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[0],
		"-X", v + ".gitMinor=" + strings.Split(KubernetesVersion, ".")[1],
		"-X", v + ".gitTreeState=clean",
		"-X", v + ".buildDate=1970-01-01T00:00:00Z",
	}, " ")
	steps := []struct {
		what string
		args []string
	}{
		{"kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd",
			[]string{"build", "-C", filepath.Join(tools, "kube"), "-trimpath", "-ldflags", ldflags, "-o", tmp + "/",
				"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kubectl", "./etcd"}},
		{"kwok", []string{"build", "-C", filepath.Join(tools, "kwok"), "-trimpath", "-ldflags", "-s -w", "-o", tmp + "/", "sigs.k8s.io/kwok/cmd/kwok"}},
	}
	for _, s := range steps {
		start := time.Now()
		fmt.Fprintf(progress, "  building %s ...\n", s.what)
		if err := runGo(ctx, progress, s.args...); err != nil {
			return fmt.Errorf("building %s: %w", s.what, err)
		}
		fmt.Fprintf(progress, "  built %s in %s\n", s.what, time.Since(start).Round(time.Second))
	}
	stages, err := kwokStageYAML(ctx, filepath.Join(tools, "kwok"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, kwokStages), stages, 0o644); err != nil {
		return err
	}
	for _, b := range allBinaries {
		if err := os.Rename(filepath.Join(tmp, b), filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("installing %s: %w", b, err)
		}
	}
	return nil
}

// kwokStageYAML gathers kwok's own stage definitions from its module: fake nodes that
// become Ready and keep their lease, and pods that become Ready, complete and go away.
// Stages the project adds for failure tests live in stages.go.
func kwokStageYAML(ctx context.Context, kwokTools string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "list", "-C", kwokTools, "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("locating the kwok module: %w", err)
	}
	root := filepath.Join(strings.TrimSpace(out.String()), "kustomize", "stage")
	var stages bytes.Buffer
	for _, f := range []string{
		"node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, fmt.Errorf("reading kwok stage %s: %w", f, err)
		}
		stages.WriteString("---\n")
		stages.Write(data)
	}
	return stages.Bytes(), nil
}

func runGo(ctx context.Context, progress io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = progress, progress
	return cmd.Run()
}

// findToolsDir finds the checkout's tools directory: $OPM_TOOLS_DIR, or tools/ beside a
// go.mod above the working directory or above the running executable.
func findToolsDir() (string, error) {
	if dir := os.Getenv(EnvToolsDir); dir != "" {
		return filepath.Abs(dir)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "tools", "kube", "go.mod")); err == nil {
				return filepath.Join(dir, "tools"), nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", errors.New("no tools/kube/go.mod above the working directory or the executable: run from an operator-manager checkout, or set " +
		EnvToolsDir + " to its tools directory, or " + EnvBinDir + " to a directory with prebuilt binaries")
}

// lockFile takes an exclusive flock, waiting for another holder.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
