package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memoryCgroup is a memory cgroup made for one manager process, as a container's would
// be: the kernel holds the process to its limit, and the process reads the limit from it.
type memoryCgroup struct{ dir, limitFile string }

// newMemoryCgroup makes a memory cgroup with the given limit (bytes), a child of this
// process's own (cgroup v2, or v1's memory hierarchy). It needs the right to write the
// cgroup file system (root, as on CI); the error says why not where it cannot.
func newMemoryCgroup(name string, limit int64) (*memoryCgroup, error) {
	parent, limitFile, err := ownMemoryCgroup()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(parent, fmt.Sprintf("%s-%d", name, os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("making memory cgroup %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("setting %s of %s: %w", limitFile, dir, err)
	}
	return &memoryCgroup{dir: dir, limitFile: limitFile}, nil
}

// procs is the file a process's pid is written to, to move it into the cgroup.
func (c *memoryCgroup) procs() string { return filepath.Join(c.dir, "cgroup.procs") }

// remove deletes the cgroup once its processes are gone.
func (c *memoryCgroup) remove() { _ = os.Remove(c.dir) }

// ownMemoryCgroup is the directory of this process's memory cgroup and the name of its
// limit file there: cgroup v2's unified hierarchy (memory.max), else v1's memory
// hierarchy (memory.limit_in_bytes).
func ownMemoryCgroup() (dir, limitFile string, err error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	var v1, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case strings.Contains(","+parts[1]+",", ",memory,"):
			v1 = parts[2]
		}
	}
	if v1 != "" {
		if d := filepath.Join("/sys/fs/cgroup/memory", v1); isDir(d) {
			return d, "memory.limit_in_bytes", nil
		}
	}
	if v2 != "" {
		d := filepath.Join("/sys/fs/cgroup", v2)
		if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err == nil {
			return d, "memory.max", nil
		}
	}
	return "", "", errors.New("no memory cgroup of this process found under /sys/fs/cgroup")
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
