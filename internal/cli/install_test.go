package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestFlagsGiven: the suggested command repeats the install's own flags, quoted where a
// shell would split them, and none of the global ones.
func TestFlagsGiven(t *testing.T) {
	root := &cobra.Command{Use: "root"}
	root.PersistentFlags().StringP("namespace", "n", "", "")
	cmd := &cobra.Command{Use: "install", Run: func(*cobra.Command, []string) {}}
	cmd.Flags().String("version", "", "")
	cmd.Flags().Bool("wait", false, "")
	cmd.Flags().StringSlice("target-namespaces", nil, "")
	root.AddCommand(cmd)
	root.SetArgs([]string{"install", "x", "-n", "team-a", "--version", ">=1.1.0 <1.3.0", "--wait", "--target-namespaces", "a,b"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := flagsGiven(cmd), ` --target-namespaces a --target-namespaces b --version ">=1.1.0 <1.3.0" --wait`; got != want {
		t.Errorf("flagsGiven: %q, want %q", got, want)
	}
}
