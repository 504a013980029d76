package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one control-plane component. Its output goes to a log file in the
// environment's directory, so a failing test can point at it.
type process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`
	// Bin, Args and Detached are how it was started, so it can be started again the same
	// way (RestartAPIServer). State files written before they existed lack them.
	Bin      string   `json:"bin,omitempty"`
	Args     []string `json:"args,omitempty"`
	Detached bool     `json:"detached,omitempty"`
	cmd      *exec.Cmd
	done     chan struct{}
	err      error
}

// startProcess starts a component in its own process group. Attached processes also get
// SIGKILL when the starting process dies (Pdeathsig), so a test binary that panics or is
// killed leaves nothing behind; detached ones (for `dev up`) outlive the CLI.
func startProcess(dir, name, bin string, detached bool, args ...string) (*process, error) {
	return spawn(dir, name, bin, detached, os.O_TRUNC, args...)
}

// spawn starts the process; logFlag is os.O_TRUNC for a new log or os.O_APPEND to keep
// the log of an earlier run of the same component.
func spawn(dir, name, bin string, detached bool, logFlag int, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|logFlag, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{Name: name, PID: cmd.Process.Pid, Log: logPath, Bin: bin, Args: append([]string(nil), args...), Detached: detached,
		cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether a started process has ended, with its error.
func (p *process) exited() (bool, error) {
	if p.done == nil {
		return !pidAlive(p.PID), nil
	}
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after the grace period.
func (p *process) stop(grace time.Duration) {
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if done, _ := p.exited(); done {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	if p.done != nil {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	} else {
		for i := 0; i < 100 && pidAlive(p.PID); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// pidAlive reports whether a process exists and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] != 'Z'
		}
	}
	return true
}

// FreePorts returns n distinct loopback ports that were free a moment ago.
//
// They are drawn from below the kernel's ephemeral range (ip_local_port_range), not from
// port 0: the kernel hands ports of that range to every outgoing connection, so with test
// packages running side by side a port chosen there and released was taken by some
// client's connection before kwok or the manager bound it ("bind: address already in
// use", a CI failure). Below the range only another picker like this one can take it, and
// Start retries on that.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := portsBelowEphemeral()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 50*n {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // in use: draw again
			}
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portsBelowEphemeral is the range [lo, hi) FreePorts draws from: from 10000 up to the
// start of the kernel's ephemeral range, or nothing where that range cannot be read or
// leaves too little below it.
func portsBelowEphemeral() (lo, hi int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 1 {
		return 0, 0
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start < 10000+1000 {
		return 0, 0
	}
	return 10000, start
}

// addressInUse reports whether a component's failure was a port taken between FreePorts
// and its bind.
func addressInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// tail returns the last lines of a log file, for error messages.
func tail(path string, max int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}
