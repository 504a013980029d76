package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
)

// document is one YAML (or JSON) document of a file.
type document struct {
	data []byte
	// line is the 1-based line of the file the document starts on, so decoder errors,
	// which count from the document's start, can be reported against the file.
	line int
}

var utf8BOM = []byte("\xef\xbb\xbf")

// splitDocuments splits a YAML stream at document markers: a line starting with "---"
// followed by the end of the line, a space or a tab. The marker line stays with the
// document it opens (the YAML decoder accepts it, and text after the marker, as in
// "--- {a: 1}", belongs to that document). Documents holding only blank lines and comments
// are dropped. A JSON stream (first byte '{' or '[') is split by a JSON decoder instead,
// so concatenated JSON objects, as written by opm, work too.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, utf8BOM)
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		// YAML flow style also starts with '{'; when the stream is not JSON, split it
		// as YAML and let the YAML decoder report what is wrong.
		if docs, err := splitJSON(data); err == nil {
			return docs
		}
	}
	var docs []document
	start, startLine, line := 0, 1, 1
	for i := 0; i < len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		next := len(data)
		if end >= 0 {
			next = i + end + 1
		}
		if i > start && isDocMarker(data[i:next]) {
			docs = appendDoc(docs, data[start:i], startLine)
			start, startLine = i, line
		}
		i = next
		line++
	}
	return appendDoc(docs, data[start:], startLine)
}

func isDocMarker(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	return len(l) == 3 || l[3] == '\n' || l[3] == '\r' || l[3] == ' ' || l[3] == '\t'
}

func appendDoc(docs []document, d []byte, line int) []document {
	if isBlankDoc(d) {
		return docs
	}
	return append(docs, document{data: d, line: line})
}

// isBlankDoc reports whether d holds nothing but markers, blank lines and comments.
func isBlankDoc(d []byte) bool {
	for len(d) > 0 {
		l := d
		if i := bytes.IndexByte(d, '\n'); i >= 0 {
			l, d = d[:i], d[i+1:]
		} else {
			d = nil
		}
		l = bytes.TrimSpace(l)
		if bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t') {
			l = bytes.TrimSpace(l[3:])
		}
		if len(l) > 0 && l[0] != '#' && !bytes.Equal(l, []byte("...")) {
			return false
		}
	}
	return true
}

func splitJSON(data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		off := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("line %d: %w", lineAt(data, dec.InputOffset()), err)
		}
		// Count the line of the document's first byte, past whitespace.
		first := off + int64(len(data[off:])-len(bytes.TrimLeft(data[off:], " \t\r\n")))
		docs = append(docs, document{data: raw, line: lineAt(data, first)})
	}
}

func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// docError rewrites the "line N" of a decoder error, counted from the document's start,
// into the line of the file, and prefixes the file name.
func docError(file string, doc document, err error) error {
	msg := err.Error()
	if doc.line > 1 {
		msg = lineRE.ReplaceAllStringFunc(msg, func(m string) string {
			n, convErr := strconv.Atoi(m[len("line "):])
			if convErr != nil {
				return m
			}
			return "line " + strconv.Itoa(n+doc.line-1)
		})
	}
	return &fileError{file: file, msg: msg, err: err}
}

// fileError is an error about a file, whose message names the file first.
type fileError struct {
	file string
	msg  string
	err  error
}

func (e *fileError) Error() string { return e.file + ": " + e.msg }
func (e *fileError) Unwrap() error { return e.err }

// sniffKind returns the value of a top-level "kind:" key written at column 0 in block
// style, or "" when there is none. It is only a hint to pick the decoder; the decoded
// object's kind is checked afterwards, so a misleading line costs a second decode, never
// a wrong result.
func sniffKind(d []byte) string {
	for len(d) > 0 {
		l := d
		if i := bytes.IndexByte(d, '\n'); i >= 0 {
			l, d = d[:i], d[i+1:]
		} else {
			d = nil
		}
		if !bytes.HasPrefix(l, []byte("kind:")) {
			continue
		}
		v := l[len("kind:"):]
		if i := bytes.Index(v, []byte(" #")); i >= 0 {
			v = v[:i]
		}
		v = bytes.Trim(bytes.TrimSpace(v), `"'`)
		return string(v)
	}
	return ""
}

// noPanic runs decode and turns a panic of a third-party decoder into an error, so that
// a hostile file rejects one bundle instead of crashing the manager.
func noPanic(what string, decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: decoder panic: %v", what, r)
		}
	}()
	return decode()
}
