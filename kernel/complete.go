package kernel

import (
	"fmt"
	"github.com/kiln-ml/kiln/kernel/docs"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/scanner"
	"go/token"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Completion, inspection and the is-complete check. Positions are cursor
// offsets counted in Unicode code points, as Jupyter (protocol 5.2+) sends
// them.

// Completion is the answer to a completion request: the candidates for the
// text between Start and End (code-point offsets), which they replace.
type Completion struct {
	Matches    []string
	Start, End int
}

var keywords = strings.Fields(`break case chan const continue default defer else fallthrough for func go goto
	if import interface map package range return select struct switch type var`)

// Complete returns the names that can complete the identifier before
// cursor: after "pkg." the package's exported members (from the symbol
// tables; the package need not be imported yet), after "x." the fields and
// methods of x's type when the session can tell it, otherwise the names in
// scope (globals, functions and types of earlier cells, names used in this
// cell, packages), keywords and builtins.
//
// While a cell runs, the names and types are those the last finished cell
// left.
func (s *Session) Complete(code string, cursor int) Completion {
	s.nsMu.RLock()
	defer s.nsMu.RUnlock()
	globals, _, done := s.lookGlobals()
	defer done()
	off := byteOffset(code, cursor)
	start := off
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(code[:start])
		if !isIdentRune(r) {
			break
		}
		start -= size
	}
	prefix := code[start:off]
	comp := Completion{Start: runeOffset(code, start), End: cursor}
	var cands []string
	if start > 0 && code[start-1] == '.' {
		cands = s.members(code, start-1, globals)
	} else {
		cands = s.scope(code, start, globals)
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) && !seen[c] && !strings.HasPrefix(c, reserved) && !strings.HasPrefix(c, "_") {
			seen[c] = true
			comp.Matches = append(comp.Matches, c)
		}
	}
	sort.Strings(comp.Matches)
	return comp
}

// members lists what can follow the dot at code[dot].
func (s *Session) members(code string, dot int, globals map[string]reflect.Value) []string {
	operand := operandBefore(code, dot)
	if operand == "" {
		return nil
	}
	t := s.typerFor(code[:lineStart(code, dot)], globals)
	x, err := parser.ParseExpr(operand)
	if err != nil {
		return nil
	}
	if id, ok := x.(*ast.Ident); ok {
		if p := t.pkg(id); p != nil {
			var out []string
			for name := range p.syms {
				out = append(out, name)
			}
			return out
		}
	}
	typ := t.typeOf(x, 0)
	if typ == nil {
		return nil
	}
	return append(memberNames(typ), s.cellMethods(typ)...)
}

// cellMethods lists the methods of the cell-declared struct types whose
// fields are typ's. yaegi gives a value of a cell-declared struct an
// anonymous reflect type without its methods, so they are found by the
// type's declared fields (two cell types with the same fields share one
// reflect type, and then both types' methods are offered).
func (s *Session) cellMethods(typ reflect.Type) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ.Name() != "" {
		return nil
	}
	var fields []string
	for i := 0; i < typ.NumField(); i++ {
		n := typ.Field(i).Name
		if len(n) > 1 && n[0] == 'X' && unicode.IsLower(rune(n[1])) {
			n = n[1:]
		}
		fields = append(fields, n)
	}
	s.know.mu.RLock()
	defer s.know.mu.RUnlock()
	var out []string
	for _, ti := range s.know.types {
		x, err := parser.ParseExpr(ti.expr.src)
		if err != nil {
			continue
		}
		st, ok := x.(*ast.StructType)
		if !ok {
			continue
		}
		var declared []string
		for _, f := range st.Fields.List {
			for _, n := range f.Names {
				declared = append(declared, n.Name)
			}
			if len(f.Names) == 0 { // embedded: its type's name
				declared = append(declared, embeddedName(f.Type))
			}
		}
		if !slices.Equal(declared, fields) {
			continue
		}
		for m := range ti.msigs {
			if ast.IsExported(m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// embeddedName is the field name of an embedded field of type x.
func embeddedName(x ast.Expr) string {
	switch t := x.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

// memberNames lists the exported methods (of T and *T) and fields of typ.
func memberNames(typ reflect.Type) []string {
	var out []string
	add := func(t reflect.Type) {
		for i := 0; i < t.NumMethod(); i++ {
			if m := t.Method(i); m.IsExported() {
				out = append(out, m.Name)
			}
		}
	}
	add(typ)
	if typ.Kind() != reflect.Pointer && typ.Kind() != reflect.Interface {
		add(reflect.PointerTo(typ))
	}
	st := typ
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() == reflect.Struct {
		for i := 0; i < st.NumField(); i++ {
			f := st.Field(i)
			switch {
			case f.IsExported() && f.PkgPath == "" && st.Name() == "" && strings.HasPrefix(f.Name, "X") && len(f.Name) > 1 && unicode.IsLower(rune(f.Name[1])):
				// yaegi's name for an unexported field of an
				// interpreted struct.
				out = append(out, f.Name[1:])
			case f.IsExported():
				out = append(out, f.Name)
			}
		}
	}
	return out
}

// scope lists the names usable at the start of an identifier.
func (s *Session) scope(code string, at int, globals map[string]reflect.Value) []string {
	out := append([]string{}, keywords...)
	for n := range universe {
		out = append(out, n)
	}
	for n := range globals {
		out = append(out, n)
	}
	s.know.mu.RLock()
	for n := range s.know.funcs {
		out = append(out, n)
	}
	for n := range s.know.types {
		out = append(out, n)
	}
	for n := range s.know.imports {
		out = append(out, n)
	}
	for n := range s.know.byName {
		out = append(out, n)
	}
	s.know.mu.RUnlock()
	// Names the cell itself uses or declares.
	var sc scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(code))
	sc.Init(file, []byte(code), nil, 0)
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.IDENT && file.Offset(pos) != at {
			out = append(out, lit)
		}
	}
	return out
}

// Inspect describes the identifier or selector at cursor: the signature of
// a function or method, the definition of a type with its methods, the type
// and value of a variable or constant, the members of a package. It
// returns false when there is nothing to say. While a cell runs, variables
// are described by their types alone.
func (s *Session) Inspect(code string, cursor int) (string, bool) {
	s.nsMu.RLock()
	defer s.nsMu.RUnlock()
	globals, live, done := s.lookGlobals()
	defer done()
	return s.inspect(code, cursor, globals, live)
}

// inspect is Inspect with the globals to use, live when their values may
// be read.
func (s *Session) inspect(code string, cursor int, globals map[string]reflect.Value, live bool) (string, bool) {
	off := byteOffset(code, cursor)
	start, end := off, off
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(code[:start])
		if !isIdentRune(r) {
			break
		}
		start -= size
	}
	for end < len(code) {
		r, size := utf8.DecodeRuneInString(code[end:])
		if !isIdentRune(r) {
			break
		}
		end += size
	}
	if start == end {
		// Right after a call's "(": describe the function.
		if i := strings.LastIndexByte(code[:off], '('); i > 0 && strings.TrimSpace(code[i+1:off]) == "" {
			return s.inspect(code, runeOffset(code, i), globals, live)
		}
		return "", false
	}
	name := code[start:end]
	t := s.typerFor(code[:lineStart(code, start)], globals)
	if start > 0 && code[start-1] == '.' {
		operand := operandBefore(code, start-1)
		x, err := parser.ParseExpr(operand)
		if err != nil {
			return "", false
		}
		if id, ok := x.(*ast.Ident); ok {
			if p := t.pkg(id); p != nil {
				v, ok := t.k.symbol(p, name)
				if !ok {
					return "", false
				}
				return withDoc(describeSymbol(p.name, name, v), p.path, name), true
			}
		}
		typ := t.typeOf(x, 0)
		if typ == nil {
			return "", false
		}
		text, ok := describeMember(typ, name)
		if !ok {
			return "", false
		}
		named := typ
		for named.Kind() == reflect.Pointer {
			named = named.Elem()
		}
		return withDoc(text, named.PkgPath(), named.Name()+"."+name), true
	}
	return s.describeName(t, name, live)
}

// withDoc returns text (the declaration as the symbol tables give it, with
// package-qualified types, and a type's methods) followed by the source
// declaration, with parameter names, and the doc comment that docs holds
// for pkg's name. Names docs does not know (cell-declared ones, packages a
// custom kernel added) get text alone.
func withDoc(text, pkg, name string) string {
	e, ok := docs.Lookup(pkg, name)
	if !ok {
		return text
	}
	out := text + "\n\n" + e.Decl
	if e.Doc != "" {
		out += "\n\n" + e.Doc
	}
	return out
}

// describeName describes a name used without a selector.
func (s *Session) describeName(t *typer, name string, live bool) (string, bool) {
	s.know.mu.RLock()
	f, ty, c := s.know.funcs[name], s.know.types[name], s.know.consts[name]
	s.know.mu.RUnlock()
	switch {
	case f != nil:
		return f.sig, true
	case ty != nil:
		var b strings.Builder
		b.WriteString(ty.sig)
		for _, m := range sortedKeys(ty.msigs) {
			b.WriteString("\n" + ty.msigs[m])
		}
		return b.String(), true
	}
	if v, ok := t.globals[name]; ok && v.IsValid() {
		kind := "var"
		if c != "" {
			kind = "const"
		}
		if !live {
			return fmt.Sprintf("%s %s %s (value not shown while a cell runs)", kind, name, typeName(v.Type())), true
		}
		return fmt.Sprintf("%s %s %s = %s", kind, name, typeName(v.Type()), preview(v)), true
	}
	if p := t.k.pkgOf(name, t.globals); p != nil {
		synopsis, _ := docs.Synopsis(p.path)
		if synopsis != "" {
			synopsis += "\n\n"
		}
		return fmt.Sprintf("package %s // import %q\n\n%s%s", p.name, p.path, synopsis, strings.Join(exportedNames(p), "\n")), true
	}
	if doc, ok := builtinDocs[name]; ok {
		return doc, true
	}
	return "", false
}

// describeSymbol describes pkg.name from the symbol tables.
func describeSymbol(pkg, name string, v reflect.Value) string {
	full := pkg + "." + name
	if c, ok := v.Interface().(constant.Value); ok {
		return fmt.Sprintf("const %s = %s", full, c.ExactString())
	}
	switch {
	case isTypeSymbol(v):
		typ := v.Type().Elem()
		var b strings.Builder
		fmt.Fprintf(&b, "type %s %s", full, kindOf(typ))
		for _, m := range methodSigs(typ) {
			b.WriteString("\n" + m)
		}
		return b.String()
	case v.Kind() == reflect.Func && !v.CanSet():
		return "func " + full + signature(v.Type(), false)
	case v.CanSet():
		return fmt.Sprintf("var %s %s", full, typeName(v.Type()))
	}
	return fmt.Sprintf("const %s %s = %v", full, typeName(v.Type()), v)
}

// describeMember describes field or method name of a value of type typ.
func describeMember(typ reflect.Type, name string) (string, bool) {
	for _, t := range []reflect.Type{typ, reflect.PointerTo(typ)} {
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Pointer {
			continue
		}
		if m, ok := t.MethodByName(name); ok {
			return fmt.Sprintf("func (%s) %s%s", typeName(t), name, signature(m.Type, t.Kind() != reflect.Interface)), true
		}
	}
	st := typ
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() == reflect.Struct {
		for _, n := range []string{name, "X" + name} {
			if f, ok := st.FieldByName(n); ok {
				return fmt.Sprintf("field %s %s", name, typeName(f.Type)), true
			}
		}
	}
	return "", false
}

// methodSigs lists the exported methods of typ and *typ.
func methodSigs(typ reflect.Type) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range []reflect.Type{typ, reflect.PointerTo(typ)} {
		if typ.Kind() == reflect.Interface && t != typ {
			break
		}
		for i := 0; i < t.NumMethod(); i++ {
			m := t.Method(i)
			if !m.IsExported() || seen[m.Name] {
				continue
			}
			seen[m.Name] = true
			out = append(out, fmt.Sprintf("func (%s) %s%s", typeName(t), m.Name, signature(m.Type, t.Kind() != reflect.Interface)))
		}
	}
	return out
}

// signature formats a func type as "(params) results", without the
// receiver when hasRecv.
func signature(ft reflect.Type, hasRecv bool) string {
	var b strings.Builder
	b.WriteByte('(')
	first := 0
	if hasRecv {
		first = 1
	}
	for i := first; i < ft.NumIn(); i++ {
		if i > first {
			b.WriteString(", ")
		}
		if ft.IsVariadic() && i == ft.NumIn()-1 {
			b.WriteString("..." + typeName(ft.In(i).Elem()))
		} else {
			b.WriteString(typeName(ft.In(i)))
		}
	}
	b.WriteByte(')')
	switch ft.NumOut() {
	case 0:
	case 1:
		b.WriteString(" " + typeName(ft.Out(0)))
	default:
		b.WriteString(" (")
		for i := 0; i < ft.NumOut(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(typeName(ft.Out(i)))
		}
		b.WriteByte(')')
	}
	return b.String()
}

func typeName(t reflect.Type) string {
	s := t.String()
	return strings.ReplaceAll(s, "interface {}", "any")
}

func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "struct"
	case reflect.Interface:
		return "interface"
	}
	if t.Name() != "" && t.PkgPath() != "" {
		return t.Kind().String()
	}
	return typeName(t)
}

func exportedNames(p *pkgInfo) []string {
	var out []string
	for n := range p.syms {
		if !strings.HasPrefix(n, "_") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// preview formats a value briefly.
func preview(v reflect.Value) string {
	if !v.CanInterface() {
		return "…"
	}
	s := fmt.Sprint(v.Interface())
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

var builtinDocs = map[string]string{
	"len":     "func len(v Type) int",
	"cap":     "func cap(v Type) int",
	"append":  "func append(slice []Type, elems ...Type) []Type",
	"make":    "func make(t Type, size ...IntegerType) Type",
	"new":     "func new(Type) *Type",
	"copy":    "func copy(dst, src []Type) int",
	"delete":  "func delete(m map[Type]Type1, key Type)",
	"panic":   "func panic(v any)",
	"recover": "func recover() any",
	"print":   "func print(args ...Type)",
	"println": "func println(args ...Type)",
	"close":   "func close(c chan<- Type)",
	"clear":   "func clear[T ~[]Type | ~map[Type]Type1](t T)",
	"min":     "func min[T cmp.Ordered](x T, y ...T) T",
	"max":     "func max[T cmp.Ordered](x T, y ...T) T",
	"ctx":     "var ctx context.Context — cancelled when the kernel is interrupted",
}

// typerFor returns a typer that also knows the variables the cell declares
// at top level in prefix (the code before the line being completed).
func (s *Session) typerFor(prefix string, globals map[string]reflect.Value) *typer {
	t := &typer{k: s.know, globals: globals}
	locals := map[string]reflect.Value{}
	fset := token.NewFileSet()
	for _, c := range splitCell(prefix) {
		p, err := parseChunk(fset, 0, c)
		if err != nil {
			continue
		}
		var stmts []ast.Stmt
		if p.stmts != nil {
			stmts = p.stmts.List
		}
		for _, st := range stmts {
			as, ok := st.(*ast.AssignStmt)
			if !ok || as.Tok != token.DEFINE {
				continue
			}
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					if typ := t.identType(id, 0); typ != nil {
						locals[id.Name] = reflect.Zero(typ)
					}
				}
			}
		}
	}
	if len(locals) > 0 {
		merged := make(map[string]reflect.Value, len(t.globals)+len(locals))
		for k, v := range t.globals {
			merged[k] = v
		}
		for k, v := range locals {
			merged[k] = v
		}
		t.globals = merged
	}
	return t
}

// operandBefore returns the expression that ends just before code[dot]
// (a "."): identifiers, selectors, calls and indexes, balanced.
func operandBefore(code string, dot int) string {
	i := dot
	depth := 0
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(code[:i])
		switch {
		case r == ')' || r == ']':
			depth++
		case r == '(' || r == '[':
			if depth == 0 {
				return strings.TrimSpace(code[i:dot])
			}
			depth--
		case depth > 0:
		case isIdentRune(r) || r == '.':
		default:
			return strings.TrimSpace(code[i:dot])
		}
		i -= size
	}
	return strings.TrimSpace(code[:dot])
}

func lineStart(code string, off int) int {
	return strings.LastIndexByte(code[:off], '\n') + 1
}

func isIdentRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// byteOffset converts a code-point offset into a byte offset of code.
func byteOffset(code string, cursor int) int {
	if cursor <= 0 {
		return 0
	}
	n := 0
	for i := range code {
		if n == cursor {
			return i
		}
		n++
	}
	return len(code)
}

// runeOffset converts a byte offset of code into a code-point offset.
func runeOffset(code string, off int) int {
	return utf8.RuneCountInString(code[:off])
}

// IsComplete tells a console whether code can run as it is ("complete"),
// needs more lines ("incomplete": unclosed brackets, a raw string or
// comment left open, a line ending in an operator or comma; indent is then
// what to prefix the next line with) or cannot run ("invalid": a closing
// bracket too many, an unterminated string, a syntax error).
func IsComplete(code string) (status, indent string) {
	if t := strings.TrimSpace(code); t == "" || strings.HasPrefix(t, "%") {
		return "complete", "" // magics are one line
	}
	var errs []string
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("", -1, len(code)), []byte(code), func(_ token.Position, msg string) { errs = append(errs, msg) }, 0)
	depth := 0
	last := token.ILLEGAL
	for {
		_, tok, _ := sc.Scan()
		if tok == token.EOF {
			break
		}
		switch tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
			if depth < 0 {
				return "invalid", ""
			}
		}
		last = tok
	}
	for _, e := range errs {
		if strings.Contains(e, "raw string literal not terminated") || strings.Contains(e, "comment not terminated") {
			return "incomplete", strings.Repeat("\t", depth)
		}
	}
	if len(errs) > 0 {
		return "invalid", ""
	}
	if depth > 0 {
		return "incomplete", strings.Repeat("\t", depth)
	}
	if last != token.SEMICOLON {
		// The scanner ends a statement after an identifier, a literal, a
		// closing bracket, return, break, ++…; any other last token
		// (an operator, a comma, a dot) continues on the next line.
		return "incomplete", "\t"
	}
	fset = token.NewFileSet()
	for _, c := range splitCell(code) {
		if _, err := parseChunk(fset, 0, c); err != nil {
			return "invalid", ""
		}
	}
	return "complete", ""
}
