// Package spelling finds the names a person probably meant: a typo in a package name or
// a schema keyword is answered with the nearest real one, not only with the list of all.
package spelling

import "strings"

// Distance is the Levenshtein distance of a and b, by byte: the fewest insertions,
// deletions and substitutions that turn one into the other.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Typo says whether b is a likely misspelling of a: at most two edits apart, and at most
// a quarter of the longer name's letters (so short names do not all look alike).
func Typo(a, b string) bool {
	d := Distance(a, b)
	return d > 0 && d <= 2 && 4*d <= max(len(a), len(b))
}

// Similar are the names of names a person asking for name may have meant: one contains
// the other (cache for cache-operator), or one is a typo of the other. In the order given.
func Similar(name string, names []string) []string {
	var out []string
	if name == "" {
		return out
	}
	for _, n := range names {
		if n != name && (strings.Contains(n, name) || strings.Contains(name, n) || Typo(name, n)) {
			out = append(out, n)
		}
	}
	return out
}

// Suggest is "; similar: a, b" for the names Similar finds, or "" for none, to end an
// error that says name was not found.
func Suggest(name string, names []string) string {
	if s := Similar(name, names); len(s) > 0 {
		return "; similar: " + strings.Join(s, ", ")
	}
	return ""
}
