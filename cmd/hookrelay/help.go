package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one of hookrelay's commands, as the help lists it.
type command struct {
	name    string
	summary string // one line, for the command list
	// readsConfig: the command reads and checks the whole configuration
	// (every variable of knownVars) before it does anything.
	readsConfig bool
}

// commands are hookrelay's commands, in the order the help lists them.
var commands = []command{
	{name: "serve", summary: "run the service (--roles api,dispatch,web,maintenance; all by default)", readsConfig: true},
	{name: "migrate", summary: "create the database if missing and apply migrations", readsConfig: true},
	{name: "bench", summary: "run the load benchmark: execs hookrelay-bench with the arguments (docs/benchmarks.md)"},
	{name: "token", summary: "print a new random admin token"},
	{name: "encryption-key", summary: "print a new random encryption key (HOOKRELAY_ENCRYPTION_KEY)"},
	{name: "rotate-encryption-key", summary: "re-encrypt every stored secret under HOOKRELAY_ENCRYPTION_KEY (previous keys in HOOKRELAY_ENCRYPTION_KEYS_OLD)", readsConfig: true},
	{name: "audit", summary: "audit verify [--print-head]: check the audit log's hash chain (exit status 1 names the first entry edited or deleted)", readsConfig: true},
	{name: "listen", summary: "forward a poll endpoint's events to a local URL: hookrelay listen --endpoint ID --forward-to http://localhost:3000/hook (HOOKRELAY_API_KEY, HOOKRELAY_URL)"},
	{name: "version", summary: "print the version"},
	{name: "help", summary: "print this help, or a command's: hookrelay help <command>"},
}

// findCommand returns the command named name.
func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// writeUsage writes the command list, then with vars the environment (a
// mistaken command line gets the list alone).
func writeUsage(w io.Writer, vars bool) {
	fmt.Fprint(w, "usage: hookrelay <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		if len(c.name) > 8 {
			fmt.Fprintf(w, "  %s\n            %s\n", c.name, c.summary)
		} else {
			fmt.Fprintf(w, "  %-8s  %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, "\n`hookrelay <command> --help` prints a command's flags and the variables it reads.\n")
	if vars {
		fmt.Fprintln(w)
		writeVars(w)
	}
}

// writeCommandHelp writes cmd's help: its usage, its flags (fs; nil: it
// has none) and the variables it reads.
func writeCommandHelp(w io.Writer, cmd command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: hookrelay %s", cmd.name)
	if fs != nil {
		fmt.Fprint(w, " [flags]")
	}
	fmt.Fprintf(w, "\n\n%s.\n", cmd.summary)
	if fs != nil {
		fmt.Fprint(w, "\nflags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	if cmd.readsConfig {
		fmt.Fprintln(w)
		writeVars(w)
	} else {
		fmt.Fprint(w, "\nIt reads no environment variable.\n")
	}
}

// writeVars lists the environment variables, from the parser's own list
// (knownVars): name, default, the values taken and the meaning.
func writeVars(w io.Writer) {
	fmt.Fprint(w, "environment (serve, migrate and rotate-encryption-key read and check every variable at start;\n"+
		"a bad value stops them with one message naming every bad variable; an unknown HOOKRELAY_ variable\n"+
		"is a warning; docs/operations/configuration.md says more):\n")
	for _, v := range knownVars() {
		fmt.Fprintf(w, "  %s\n        %s\n        default: %s", v.Name, varMeanings[v.Name], v.Default)
		if v.Takes != "" {
			fmt.Fprintf(w, "; takes %s", v.Takes)
		}
		fmt.Fprintln(w)
	}
}

// parseFlags parses the flags of cmd. -h or --help writes cmd's help to
// stdout and returns flag.ErrHelp, which run answers with success; any
// other problem writes the help to stderr and returns an errUsage.
func parseFlags(cmd command, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeCommandHelp(stdout, cmd, fs)
		return flag.ErrHelp
	case err != nil:
		writeCommandHelp(stderr, cmd, fs)
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// wantsHelp reports whether args ask for help: the commands without flags
// answer -h and --help too.
func wantsHelp(args []string) bool {
	return len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help")
}

// commandNames lists the commands' names, for an error.
func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}
