package exepages

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseSmaps reads the mappings of a /proc/PID/smaps listing: a header line per mapping
// ("start-end perms offset dev inode [path]") followed by "Field: value kB" lines.
func ParseSmaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			m, err := parseHeader(text, f)
			if err != nil {
				return nil, fmt.Errorf("smaps line %d: %w", line, err)
			}
			out = append(out, m)
			continue
		}
		if len(out) == 0 || len(f) < 2 {
			continue
		}
		cur := &out[len(out)-1]
		switch f[0] {
		case "Rss:":
			cur.RssKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "Anonymous:":
			cur.AnonymousKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return out, sc.Err()
}

// parseHeader reads "start-end perms offset dev inode [path]"; the path may hold spaces
// (and ends in " (deleted)" when the file was replaced).
func parseHeader(text string, f []string) (Mapping, error) {
	if len(f) < 5 {
		return Mapping{}, fmt.Errorf("mapping header %q: want at least 5 fields", text)
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return Mapping{}, fmt.Errorf("mapping header %q: address range without '-'", text)
	}
	start, err := strconv.ParseUint(lo, 16, 64)
	if err != nil {
		return Mapping{}, fmt.Errorf("mapping header %q: start address: %w", text, err)
	}
	end, err := strconv.ParseUint(hi, 16, 64)
	if err != nil {
		return Mapping{}, fmt.Errorf("mapping header %q: end address: %w", text, err)
	}
	m := Mapping{Start: uintptr(start), End: uintptr(end), Perms: f[1]}
	if len(f) > 5 {
		// The path starts after the inode field; keep its own spacing.
		rest := text
		for i := 0; i < 5; i++ {
			rest = strings.TrimLeft(rest, " \t")
			rest = rest[len(f[i]):]
		}
		m.Path = strings.TrimSpace(rest)
	}
	return m, nil
}
