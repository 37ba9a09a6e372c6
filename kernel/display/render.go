package display

import (
	"fmt"
	"image"
	"reflect"
	"strings"
)

// The rendering interfaces. A value shown as a cell's result, or passed to
// Render, Any or Auto, is rendered in every format whose interface it
// implements. They are ordinary named interfaces: a type implements one by
// having the method, without importing this package.
type (
	// MIMEr renders a value in several formats at once: MIME type →
	// content (text/html, image/svg+xml, text/plain, …). Binary formats
	// must be base64-encoded by the method.
	MIMEr interface{ MIME() map[string]string }
	// HTMLer renders a value as HTML.
	HTMLer interface{ HTML() string }
	// Renderer renders a value as a full bundle (gophernotes).
	Renderer interface{ Render() Data }
	// SimpleRenderer renders a value as a MIME map (gophernotes).
	SimpleRenderer interface{ SimpleRender() MIMEMap }
	// JavaScripter renders a value as JavaScript to run (gophernotes).
	JavaScripter interface{ JavaScript() string }
	// JPEGer renders a value as an encoded JPEG image (gophernotes).
	JPEGer interface{ JPEG() []byte }
	// JSONer renders a value as JSON (gophernotes).
	JSONer interface{ JSON() map[string]any }
	// Latexer renders a value as LaTeX (gophernotes).
	Latexer interface{ Latex() string }
	// Markdowner renders a value as Markdown (gophernotes).
	Markdowner interface{ Markdown() string }
	// PNGer renders a value as an encoded PNG image (gophernotes).
	PNGer interface{ PNG() []byte }
	// PDFer renders a value as a PDF document (gophernotes).
	PDFer interface{ PDF() []byte }
	// SVGer renders a value as an SVG image (gophernotes).
	SVGer interface{ SVG() string }
)

// Render returns the bundle that shows v as a cell result: a [Data] as it
// is, otherwise every format of the rendering interfaces v implements, plus
// text/plain (String() when v has it, else fmt's %v) unless a format already
// gave one. A nil v gives an empty bundle.
func Render(v any) Data {
	if v == nil {
		return Data{}
	}
	var d Data
	add := func(mime string, content any) {
		if d.Data == nil {
			d.Data = MIMEMap{}
		}
		d.Data[mime] = content
	}
	switch x := v.(type) {
	case Data:
		d = x.clone()
	case *Data:
		if x == nil {
			return Data{}
		}
		d = x.clone()
	}
	if r, ok := v.(Renderer); ok {
		d = merge(d, r.Render())
	}
	if r, ok := v.(SimpleRenderer); ok {
		d = merge(d, Data{Data: r.SimpleRender()})
	}
	if r, ok := v.(MIMEr); ok {
		for mime, content := range r.MIME() {
			add(mime, content)
		}
	}
	if r, ok := v.(HTMLer); ok {
		add(MIMETypeHTML, r.HTML())
	}
	if r, ok := v.(Markdowner); ok {
		add(MIMETypeMarkdown, r.Markdown())
	}
	if r, ok := v.(SVGer); ok {
		add(MIMETypeSVG, r.SVG())
	}
	if r, ok := v.(PNGer); ok {
		add(MIMETypePNG, r.PNG())
	}
	if r, ok := v.(JPEGer); ok {
		add(MIMETypeJPEG, r.JPEG())
	}
	if r, ok := v.(PDFer); ok {
		add(MIMETypePDF, r.PDF())
	}
	if r, ok := v.(Latexer); ok {
		add(MIMETypeLatex, r.Latex())
	}
	if r, ok := v.(JSONer); ok {
		add(MIMETypeJSON, r.JSON())
	}
	if r, ok := v.(JavaScripter); ok {
		add(MIMETypeJavaScript, r.JavaScript())
	}
	if img, ok := v.(image.Image); ok && !hasAny(d, MIMETypePNG) {
		d = merge(d, Image(img))
	}
	if _, ok := d.Data[MIMETypeText]; !ok {
		switch v.(type) {
		case Data, *Data:
			add(MIMETypeText, "") // a bundle's own text, if any, is all there is
		default:
			add(MIMETypeText, Text(v))
		}
	}
	return d
}

// Text returns the plain-text form of v: String() when v has it, else fmt's
// %v. Interface wrappers that the Go interpreter passes to compiled code are
// looked through, so an interpreted value prints as itself.
func Text(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return fmt.Sprint(Unwrap(v))
}

// Unwrap returns the value inside an interface wrapper that the yaegi
// interpreter builds when it passes an interpreted value to compiled code
// (a struct type named "_…" whose first field is IValue), or v itself.
func Unwrap(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct {
		return v
	}
	t := rv.Type()
	if !strings.HasPrefix(t.Name(), "_") || t.NumField() == 0 || t.Field(0).Name != "IValue" {
		return v
	}
	inner := rv.Field(0)
	if !inner.CanInterface() {
		return v
	}
	return inner.Interface()
}

// isRich reports whether v implements one of the rendering interfaces (or
// is a Data).
func isRich(v any) bool {
	switch v.(type) {
	case Data, *Data, Renderer, SimpleRenderer, MIMEr, HTMLer, Markdowner, SVGer, PNGer, JPEGer, PDFer,
		Latexer, JSONer, JavaScripter, image.Image:
		return true
	}
	return false
}

// IsRich reports whether Render(v) gives more than text/plain.
func IsRich(v any) bool { return v != nil && isRich(v) }

func (d Data) clone() Data {
	return Data{Data: cloneMap(d.Data), Metadata: cloneMap(d.Metadata), Transient: cloneMap(d.Transient)}
}

func cloneMap(m MIMEMap) MIMEMap {
	if m == nil {
		return nil
	}
	out := make(MIMEMap, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// merge adds src's entries to dst, src winning on conflicts.
func merge(dst, src Data) Data {
	put := func(to *MIMEMap, from MIMEMap) {
		if len(from) == 0 {
			return
		}
		if *to == nil {
			*to = MIMEMap{}
		}
		for k, v := range from {
			(*to)[k] = v
		}
	}
	put(&dst.Data, src.Data)
	put(&dst.Metadata, src.Metadata)
	put(&dst.Transient, src.Transient)
	return dst
}

func hasAny(d Data, mime string) bool {
	_, ok := d.Data[mime]
	return ok
}
