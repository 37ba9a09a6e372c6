package kernel

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// A cell is split into chunks, each a run of top-level declarations
// (import, func, type, const, var) or of statements: yaegi parses a source
// either as a file of declarations or as statements wrapped in func main,
// chosen by its first token. Each chunk is parsed as its own file with a
// //line directive, so every position yaegi reports (compile errors, panic
// frames) is already in the cell's own coordinates.

// chunk is a run of top-level declarations or statements of a cell.
type chunk struct {
	decl      bool
	text      string // source, from the first token of the run
	line, col int    // where text starts in the cell (1-based)
}

// splitCell cuts src into chunks. It only tokenises: syntax errors are left
// to the parser, which reports them with positions.
func splitCell(src string) []chunk {
	type tok struct {
		pos token.Pos
		tok token.Token
	}
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(file, []byte(src), func(token.Position, string) {}, 0)
	var toks []tok
	for {
		pos, t, _ := s.Scan()
		if t == token.EOF {
			break
		}
		toks = append(toks, tok{pos, t})
	}

	// isDecl reports whether the statement starting at toks[i] is a
	// declaration.
	isDecl := func(i int) bool {
		switch toks[i].tok {
		case token.IMPORT, token.TYPE, token.CONST, token.VAR:
			return true
		case token.FUNC:
			// func name… is a declaration; func (recv) name(… a method;
			// func(…) … a function literal (a statement).
			if i+1 < len(toks) && toks[i+1].tok == token.IDENT {
				return true
			}
			if i+1 >= len(toks) || toks[i+1].tok != token.LPAREN {
				return false
			}
			depth := 0
			for j := i + 1; j < len(toks); j++ {
				switch toks[j].tok {
				case token.LPAREN:
					depth++
				case token.RPAREN:
					depth--
					if depth == 0 {
						return j+2 < len(toks) && toks[j+1].tok == token.IDENT &&
							(toks[j+2].tok == token.LPAREN || toks[j+2].tok == token.LBRACK)
					}
				}
			}
		}
		return false
	}

	var chunks []chunk
	var offsets []int // where each chunk starts in src
	depth, atStart := 0, true
	onlyImports := false // the open chunk has imports only (so far)
	for i, t := range toks {
		if atStart && t.tok != token.SEMICOLON {
			decl := isDecl(i)
			open := len(chunks) > 0 && chunks[len(chunks)-1].decl == decl
			// Go wants imports before other declarations: an import
			// after them starts a new chunk.
			if open && decl && t.tok == token.IMPORT && !onlyImports {
				open = false
			}
			if !open {
				p := fset.Position(t.pos)
				chunks = append(chunks, chunk{decl: decl, line: p.Line, col: p.Column})
				offsets = append(offsets, p.Offset)
				onlyImports = true
			}
			onlyImports = onlyImports && t.tok == token.IMPORT
		}
		atStart = false
		switch t.tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
		case token.SEMICOLON:
			atStart = depth <= 0
		}
	}
	for i := range chunks {
		end := len(src)
		if i+1 < len(chunks) {
			end = offsets[i+1]
		}
		chunks[i].text = src[offsets[i]:end]
	}
	return chunks
}

// cellFile is the file name positions of cell n are reported under. The base
// name must stay yaegi's default ("_.go"): yaegi keys imports by the base
// name of the file, so every chunk must share it to see earlier imports.
func cellFile(n int) string { return fmt.Sprintf("cell%d/_.go", n) }

// source returns the chunk as a Go file for the parser: a file of
// declarations, or statements inside func main.
func (c chunk) source(cell int) string {
	dir := fmt.Sprintf("//line %s:%d:%d\n", cellFile(cell), c.line, c.col)
	if c.decl {
		return "package main;\n" + dir + c.text
	}
	return "package main; func main() {\n" + dir + c.text + "\n}"
}

// parsed is a chunk parsed for evaluation.
type parsed struct {
	chunk
	src  string // what was parsed
	file *ast.File
	// stmts is the body of main for a statement chunk.
	stmts *ast.BlockStmt
}

// node returns what is compiled: the file, or the statements.
func (p *parsed) node() ast.Node {
	if p.decl {
		return p.file
	}
	return p.stmts
}

// parseChunk parses c with fset (the interpreter's: yaegi resolves positions
// through it).
func parseChunk(fset *token.FileSet, cell int, c chunk) (*parsed, error) {
	src := c.source(cell)
	f, err := parser.ParseFile(fset, "_.go", src, parser.DeclarationErrors)
	if err != nil {
		return nil, trimErrors(err, c)
	}
	p := &parsed{chunk: c, src: src, file: f}
	if !c.decl {
		fn, ok := f.Decls[0].(*ast.FuncDecl)
		if !ok || len(f.Decls) != 1 || fn.Body == nil {
			// The statements closed func main early ("}" too many):
			// report it where it happened.
			pos := fset.Position(f.Decls[0].End())
			if len(f.Decls) > 1 {
				pos = fset.Position(f.Decls[1].Pos())
			}
			return nil, scanner.ErrorList{{Pos: pos, Msg: "unexpected } or declaration after statements"}}
		}
		p.stmts = fn.Body
	}
	return p, nil
}

// trimErrors drops the parse errors reported past the end of the chunk
// (about the code the session wrapped it in), keeping at least one.
func trimErrors(err error, c chunk) error {
	list, ok := err.(scanner.ErrorList)
	if !ok || len(list) == 0 {
		return err
	}
	text := strings.TrimRight(c.text, " \t\r\n")
	line := c.line + strings.Count(text, "\n")
	col := len(text) - strings.LastIndexByte(text, '\n')
	if line == c.line {
		col += c.col - 1
	}
	var kept scanner.ErrorList
	for _, e := range list {
		if e.Pos.Line < line || (e.Pos.Line == line && e.Pos.Column <= col) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		// The code the session wrapped the chunk in was reached: the
		// cell ended inside a statement or declaration.
		pos := list[0].Pos
		pos.Line, pos.Column = line, col
		kept = scanner.ErrorList{{Pos: pos, Msg: "unexpected end of cell"}}
	}
	return kept
}

// textOf returns the source of node n of p (in p.src).
func (p *parsed) textOf(fset *token.FileSet, n ast.Node) string {
	tf := fset.File(n.Pos())
	if tf == nil {
		return ""
	}
	start, end := tf.Offset(n.Pos()), tf.Offset(n.End())
	if start < 0 || end > len(p.src) || start > end {
		return ""
	}
	return p.src[start:end]
}

// isMagic reports whether a cell is a magic (its first line starts with %
// or !), and returns it trimmed.
func isMagic(code string) (string, bool) {
	t := strings.TrimSpace(code)
	if !strings.HasPrefix(t, "%") && !strings.HasPrefix(t, "!") {
		return "", false
	}
	return t, true
}
