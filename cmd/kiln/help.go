package main

import (
	"fmt"
	"io"
	"strings"
)

// helpCommand is `kiln help [COMMAND]`.
func helpCommand(args []string, stdout, _ io.Writer) error {
	switch {
	case len(args) == 0:
		printCommandList(stdout)
		return nil
	case len(args) > 1:
		return usagef("help: want one command, got %q", args)
	}
	c := lookup(args[0])
	if c == nil {
		msg := fmt.Sprintf("help: unknown command %q", args[0])
		if s := suggest(args[0]); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return usagef("%s (the commands: %s)", msg, strings.Join(commandNames(), ", "))
	}
	printCommandHelp(stdout, c)
	return nil
}

// printCommandList prints what `kiln help` prints: how to call kiln, and
// each command with its summary.
func printCommandList(w io.Writer) {
	fmt.Fprint(w, `Kiln is a deep-learning framework for Go; kiln is its command-line tool.

Usage:

	kiln <command> [arguments]

The commands are:

`)
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-10s  %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Use "kiln help <command>" or "kiln <command> -h" for more about a command.

Environment:

	KILN_DEVICE     the default device: cpu, cuda, cuda:N or strict
	                (else the best one detected; see "kiln devices")
	KILN_CUDA_PATH  directories to look for the CUDA libraries in first
	KILN_REMOTE     remote device URLs for "kiln devices" to list, comma-separated
	                (remote://HOST:PORT/DEVICE; see "kiln serve")
	KILN_REMOTE_TOKEN, KILN_REMOTE_CA  the token and CA file remote devices use
`)
}

// printCommandHelp prints c's usage, what it does and its flags.
func printCommandHelp(w io.Writer, c *command) {
	printUsageLines(w, c)
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.doc))
	if c.flags == nil {
		return
	}
	var flags strings.Builder
	c.flags(&flags)
	if flags.Len() == 0 {
		return
	}
	text := flags.String()
	if !strings.HasSuffix(strings.SplitN(text, "\n", 2)[0], ":") {
		text = "Flags:\n" + text
	}
	fmt.Fprintf(w, "\n%s", text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(w)
	}
}

// printUsageLines prints c's forms: "usage: kiln NAME …", one line each;
// a form starting with a space continues the one before.
func printUsageLines(w io.Writer, c *command) {
	for i, u := range c.usage {
		switch {
		case strings.HasPrefix(u, " "): // under the first argument of the form before
			fmt.Fprintf(w, "%*s%s\n", len("usage: kiln  ")+len(c.name), "", strings.TrimSpace(u))
		case i == 0:
			fmt.Fprintf(w, "usage: kiln %s\n", u)
		default:
			fmt.Fprintf(w, "       kiln %s\n", u)
		}
	}
}

// commandNames lists the commands' names in the table's order.
func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// suggest returns the command a mistyped name most likely meant: one it
// is a prefix of (of three letters or more), or the nearest within an edit
// per three letters (at least one); "" when none is close.
func suggest(name string) string {
	if name == "" {
		return ""
	}
	best, bestDist := "", max(1, len(name)/3)+1
	for _, c := range commands {
		if strings.HasPrefix(c.name, name) && len(name) >= 3 {
			return c.name
		}
		if d := editDistance(name, c.name); d < bestDist {
			best, bestDist = c.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
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
