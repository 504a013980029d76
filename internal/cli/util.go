package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// bindGoFlags adds the Go flags a library binds (zap's log options) to the command.
func bindGoFlags(cmd *cobra.Command, bind func(*flag.FlagSet)) {
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	bind(fs)
	cmd.Flags().AddGoFlagSet(fs)
}

func defaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "operator-manager", "bundles")
	}
	return filepath.Join(os.TempDir(), "operator-manager", "bundles")
}

// output is the -o flag every listing verb shares: a table by default, or json or yaml.
type output struct {
	format string
	// wide: the verb also takes -o wide, a table with more columns (as kubectl's).
	wide bool
}

// Wide reports whether -o wide was asked for.
func (o *output) Wide() bool { return o.format == "wide" }

func (o *output) bind(cmd *cobra.Command) {
	formats := []string{"table", "json", "yaml"}
	if o.wide {
		formats = []string{"table", "wide", "json", "yaml"}
	}
	cmd.Flags().StringVarP(&o.format, "output", "o", "table", "output format: "+strings.Join(formats[:len(formats)-1], ", ")+" or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	// A bad format is a wrong command line, refused before the verb changes anything.
	next := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if o.format != "" && !slices.Contains(formats, o.format) {
			return usageError("unknown output format %q: use %s or yaml", o.format, strings.Join(formats[:len(formats)-1], ", "))
		}
		if next != nil {
			return next(c, args)
		}
		return nil
	}
}

// structured reports whether stdout carries JSON or YAML for a program.
func (o *output) structured() bool { return o.format == "json" || o.format == "yaml" }

// human is where a verb that acts says what it does and, with --wait, what it waits for:
// stdout for a person, stderr when stdout carries JSON or YAML, so a script parses stdout
// whole and still sees the progress.
func (o *output) human(cmd *cobra.Command) io.Writer {
	if o.structured() {
		return cmd.ErrOrStderr()
	}
	return cmd.OutOrStdout()
}

// result ends a verb that acts: with -o json|yaml it prints the object the verb left
// (even when the verb failed, so a script sees where it stopped), then returns err.
func (o *output) result(cmd *cobra.Command, err error, doc func() any) error {
	if !o.structured() {
		return err
	}
	if perr := o.print(cmd.OutOrStdout(), doc(), nil); perr != nil && err == nil {
		return perr
	}
	return err
}

// print writes v as JSON or YAML, or calls table with a tabwriter.
func (o *output) print(w io.Writer, v any, table func(tw *tabwriter.Writer)) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		// An empty list is [] to a program reading -o json|yaml, never null.
		v = reflect.MakeSlice(rv.Type(), 0, 0).Interface()
	}
	switch o.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "table", "", "wide":
		tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
		table(tw)
		return tw.Flush()
	default:
		return fmt.Errorf("unknown output format %q: use table, json or yaml", o.format)
	}
}
