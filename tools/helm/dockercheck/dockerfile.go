// Package dockercheck checks the repository's Dockerfile where no Docker
// engine is available: it parses the Dockerfile into stages, reproduces the
// build context that .dockerignore leaves, splits a RUN line into the words
// of a simple command so the test can run the same `go build`, and inspects
// the resulting binary.
//
// The parser covers the Dockerfile subset the project uses: comments and
// parser directives, backslash line continuations, instruction flags
// (--mount=..., --from=...), ARG/ENV, and exec-form JSON arrays. Heredocs
// and a changed escape character are rejected rather than misread.
package dockercheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Instruction is one Dockerfile instruction.
type Instruction struct {
	Cmd   string   // upper case, e.g. RUN
	Flags []string // leading --flag=value words, e.g. --mount=type=cache,...
	Args  string   // the rest of the instruction, continuations joined
	Line  int      // first line, 1-based
}

// ExecForm decodes Args as a JSON array (exec form), as in
// ENTRYPOINT ["/dpsurv"].
func (in Instruction) ExecForm() ([]string, bool) {
	var out []string
	if !strings.HasPrefix(strings.TrimSpace(in.Args), "[") {
		return nil, false
	}
	if err := json.Unmarshal([]byte(in.Args), &out); err != nil {
		return nil, false
	}
	return out, true
}

// Flag returns the value of --name=value among the instruction's flags.
func (in Instruction) Flag(name string) (string, bool) {
	for _, f := range in.Flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// Stage is one FROM ... [AS name] block.
type Stage struct {
	Base         string
	Name         string
	Line         int
	Instructions []Instruction
}

// Find returns the stage's instructions with the given command.
func (s Stage) Find(cmd string) []Instruction {
	var out []Instruction
	for _, in := range s.Instructions {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// Dockerfile is a parsed Dockerfile.
type Dockerfile struct {
	// Global holds the instructions before the first FROM (ARG only).
	Global []Instruction
	Stages []Stage
}

// Final returns the last stage, the one the image is made of.
func (d *Dockerfile) Final() Stage { return d.Stages[len(d.Stages)-1] }

// Stage returns the stage named name.
func (d *Dockerfile) Stage(name string) (Stage, bool) {
	for _, s := range d.Stages {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return Stage{}, false
}

// Parse reads a Dockerfile.
func Parse(r io.Reader) (*Dockerfile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	d := &Dockerfile{}
	var (
		buf       strings.Builder
		startLine int
		lineNo    int
	)
	flush := func() error {
		text := strings.TrimSpace(buf.String())
		buf.Reset()
		if text == "" {
			return nil
		}
		in, err := parseInstruction(text, startLine)
		if err != nil {
			return err
		}
		switch {
		case in.Cmd == "FROM":
			words := strings.Fields(in.Args)
			st := Stage{Line: in.Line}
			switch {
			case len(words) == 1:
				st.Base = words[0]
			case len(words) == 3 && strings.EqualFold(words[1], "AS"):
				st.Base, st.Name = words[0], words[2]
			default:
				return fmt.Errorf("parse dockerfile: line %d: FROM %q: want IMAGE [AS NAME]", in.Line, in.Args)
			}
			d.Stages = append(d.Stages, st)
		case len(d.Stages) == 0:
			if in.Cmd != "ARG" {
				return fmt.Errorf("parse dockerfile: line %d: %s before the first FROM", in.Line, in.Cmd)
			}
			d.Global = append(d.Global, in)
		default:
			s := &d.Stages[len(d.Stages)-1]
			s.Instructions = append(s.Instructions, in)
		}
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "#") {
			if lineNo == 1 || buf.Len() == 0 {
				if k, _, ok := strings.Cut(strings.TrimPrefix(trim, "#"), "="); ok && strings.EqualFold(strings.TrimSpace(k), "escape") {
					return nil, fmt.Errorf("parse dockerfile: line %d: escape directive not supported", lineNo)
				}
			}
			continue // comments, also inside a continued instruction
		}
		if buf.Len() == 0 {
			if trim == "" {
				continue
			}
			startLine = lineNo
		}
		if strings.HasSuffix(trim, "\\") {
			buf.WriteString(strings.TrimSuffix(trim, "\\"))
			buf.WriteByte(' ')
			continue
		}
		buf.WriteString(trim)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse dockerfile: %w", err)
	}
	if buf.Len() > 0 {
		return nil, fmt.Errorf("parse dockerfile: line %d: continuation at end of file", startLine)
	}
	if len(d.Stages) == 0 {
		return nil, errors.New("parse dockerfile: no FROM")
	}
	return d, nil
}

func parseInstruction(text string, line int) (Instruction, error) {
	cmd, rest, _ := strings.Cut(text, " ")
	in := Instruction{Cmd: strings.ToUpper(cmd), Line: line}
	rest = strings.TrimSpace(rest)
	for strings.HasPrefix(rest, "--") {
		var flag string
		flag, rest, _ = strings.Cut(rest, " ")
		in.Flags = append(in.Flags, flag)
		rest = strings.TrimSpace(rest)
	}
	if strings.Contains(rest, "<<") && (in.Cmd == "RUN" || in.Cmd == "COPY") {
		return in, fmt.Errorf("parse dockerfile: line %d: heredocs not supported", line)
	}
	in.Args = rest
	return in, nil
}

// ShellWords splits a shell command line into words, honouring single and
// double quotes and backslash escapes. It refuses anything but a simple
// command (no operators, redirections, substitutions or expansions), so a
// caller can run exactly what a RUN line runs without a shell.
func ShellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inTok bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inTok {
				words = append(words, cur.String())
				cur.Reset()
				inTok = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("shell words: unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inTok = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch s[i] {
				case '\\':
					if i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
						i++
					}
				case '$', '`':
					return nil, fmt.Errorf("shell words: expansion in %q", s)
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("shell words: unterminated \" in %q", s)
			}
			inTok = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inTok = true
		case strings.IndexByte(";&|<>()$`*?[{}~#", c) >= 0:
			return nil, fmt.Errorf("shell words: %q is not a simple command (found %q)", s, c)
		default:
			cur.WriteByte(c)
			inTok = true
		}
	}
	if inTok {
		words = append(words, cur.String())
	}
	return words, nil
}

// SplitAssignments separates leading NAME=value words (environment for the
// command) from the command itself.
func SplitAssignments(words []string) (env, cmd []string) {
	i := 0
	for ; i < len(words); i++ {
		k, _, ok := strings.Cut(words[i], "=")
		if !ok || k == "" || !isName(k) {
			break
		}
	}
	return words[:i], words[i:]
}

func isName(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ExpandArgs replaces ${NAME} and $NAME for the build arguments in args
// (what a RUN or LABEL line sees of an ARG); any other expansion is left
// for ShellWords to refuse.
func ExpandArgs(s string, args map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		if strings.HasPrefix(rest, "{") {
			if j := strings.IndexByte(rest, '}'); j > 0 {
				if v, ok := args[rest[1:j]]; ok {
					b.WriteString(v)
					i += j + 1
					continue
				}
			}
		} else {
			j := 0
			for j < len(rest) && (rest[j] == '_' || rest[j] >= 'A' && rest[j] <= 'Z' || rest[j] >= 'a' && rest[j] <= 'z' || j > 0 && rest[j] >= '0' && rest[j] <= '9') {
				j++
			}
			if v, ok := args[rest[:j]]; ok && j > 0 {
				b.WriteString(v)
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// StageArgs returns the build arguments a stage declares (ARG NAME or
// ARG NAME=default) with their defaults, overridden by buildArgs (docker
// build --build-arg) for the names the stage declares.
func StageArgs(st Stage, buildArgs map[string]string) map[string]string {
	out := map[string]string{}
	for _, a := range st.Find("ARG") {
		name, def, _ := strings.Cut(strings.TrimSpace(a.Args), "=")
		out[name] = strings.Trim(def, `"`)
		if v, ok := buildArgs[name]; ok {
			out[name] = v
		}
	}
	return out
}
