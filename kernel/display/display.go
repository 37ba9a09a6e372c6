package display

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"strings"
)

// MIME types understood by Jupyter front ends.
const (
	MIMETypeHTML       = "text/html"
	MIMETypeJavaScript = "application/javascript"
	MIMETypeJPEG       = "image/jpeg"
	MIMETypeJSON       = "application/json"
	MIMETypeLatex      = "text/latex"
	MIMETypeMarkdown   = "text/markdown"
	MIMETypePNG        = "image/png"
	MIMETypePDF        = "application/pdf"
	MIMETypeSVG        = "image/svg+xml"
	MIMETypeText       = "text/plain"
)

// MIMEMap maps a MIME type to its content: a string, a []byte (binary
// formats; Jupyter receives them base64-encoded) or any JSON-serialisable
// value (application/json).
type MIMEMap = map[string]any

// Data is a MIME bundle: the same content in one or more formats, with
// optional per-format metadata (image width and height, …). Transient holds
// what Jupyter does not store in the notebook, such as "display_id".
type Data struct {
	Data      MIMEMap `json:"data"`
	Metadata  MIMEMap `json:"metadata"`
	Transient MIMEMap `json:"transient,omitempty"`
}

// Empty reports whether d holds no content at all.
func (d Data) Empty() bool { return len(d.Data) == 0 }

// MakeData returns a bundle holding data as mimeType, plus its fmt form as
// text/plain (unless mimeType is text/plain itself).
func MakeData(mimeType string, data any) Data {
	d := Data{Data: MIMEMap{mimeType: data}}
	if mimeType != MIMETypeText {
		d.Data[MIMETypeText] = fmt.Sprint(data)
	}
	return d
}

// MakeData3 returns a bundle holding data as mimeType and plaintext as
// text/plain.
func MakeData3(mimeType string, plaintext string, data any) Data {
	return Data{Data: MIMEMap{MIMETypeText: plaintext, mimeType: data}}
}

// MIME returns the bundle made of data and metadata as given.
func MIME(data, metadata MIMEMap) Data { return Data{Data: data, Metadata: metadata} }

// HTML returns a bundle showing html.
func HTML(html string) Data { return MakeData(MIMETypeHTML, html) }

// Markdown returns a bundle showing markdown.
func Markdown(markdown string) Data { return MakeData(MIMETypeMarkdown, markdown) }

// SVG returns a bundle showing an SVG image given as its XML text.
func SVG(svg string) Data { return MakeData(MIMETypeSVG, svg) }

// PNG returns a bundle showing an encoded PNG image.
func PNG(png []byte) Data { return binary(MIMETypePNG, png) }

// JPEG returns a bundle showing an encoded JPEG image.
func JPEG(jpeg []byte) Data { return binary(MIMETypeJPEG, jpeg) }

// PDF returns a bundle showing a PDF document.
func PDF(pdf []byte) Data { return binary(MIMETypePDF, pdf) }

// JavaScript returns a bundle that runs javascript in the front end (where
// the front end allows it; JupyterLab runs it only in trusted notebooks).
func JavaScript(javascript string) Data { return MakeData(MIMETypeJavaScript, javascript) }

// Javascript is JavaScript, for snippets that spell it this way.
func Javascript(javascript string) Data { return JavaScript(javascript) }

// Latex returns a bundle showing an inline LaTeX formula; latex may or may
// not be wrapped in $ signs.
func Latex(latex string) Data {
	return MakeData3(MIMETypeLatex, latex, "$"+strings.Trim(latex, "$")+"$")
}

// Math returns a bundle showing a LaTeX formula as a display equation.
func Math(latex string) Data {
	return MakeData3(MIMETypeLatex, latex, "$$"+strings.Trim(latex, "$")+"$$")
}

// JSON returns a bundle showing v as application/json. A string, []byte or
// json.RawMessage is taken as JSON text; anything else is kept as is and
// serialised with encoding/json when it is sent. Invalid JSON text or a value
// encoding/json cannot marshal gives a text/plain bundle saying why.
func JSON(v any) Data {
	var raw []byte
	switch x := v.(type) {
	case string:
		raw = []byte(x)
	case []byte:
		raw = x
	case json.RawMessage:
		raw = x
	default:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return MakeData(MIMETypeText, "display.JSON: "+err.Error())
		}
		return MakeData3(MIMETypeJSON, string(b), v)
	}
	if !json.Valid(raw) {
		return MakeData(MIMETypeText, "display.JSON: invalid JSON text")
	}
	var text bytes.Buffer
	if json.Indent(&text, raw, "", "  ") != nil {
		text.Reset()
		text.Write(raw)
	}
	return MakeData3(MIMETypeJSON, text.String(), json.RawMessage(append([]byte(nil), raw...)))
}

// Image returns a bundle showing img encoded as PNG, with its width and
// height as metadata. An image that cannot be encoded gives a text/plain
// bundle saying why.
func Image(img image.Image) Data {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return MakeData(MIMETypeText, "display.Image: "+err.Error())
	}
	b := img.Bounds()
	return Data{
		Data: MIMEMap{
			MIMETypePNG:  buf.Bytes(),
			MIMETypeText: fmt.Sprintf("image %dx%d", b.Dx(), b.Dy()),
		},
		Metadata: MIMEMap{MIMETypePNG: MIMEMap{"width": b.Dx(), "height": b.Dy()}},
	}
}

// Any returns a bundle showing data as mimeType. Values that implement a
// rendering interface are rendered as by [Render] (mimeType is then only
// used for string or []byte content). A string needs mimeType; for []byte an
// empty mimeType is detected from the content; an io.Reader or io.WriterTo
// is read to its end first. Any panics for other types, as gophernotes does.
func Any(mimeType string, data any) Data {
	if isRich(data) {
		return Render(data)
	}
	var b []byte
	switch x := data.(type) {
	case string:
		if mimeType == "" || mimeType == MIMETypeText {
			return MakeData(MIMETypeText, x)
		}
		return MakeData(mimeType, x)
	case []byte:
		b = x
	case io.Reader:
		var err error
		if b, err = io.ReadAll(x); err != nil {
			return MakeData(MIMETypeText, "display.Any: "+err.Error())
		}
	case io.WriterTo:
		var buf bytes.Buffer
		if _, err := x.WriteTo(&buf); err != nil {
			return MakeData(MIMETypeText, "display.Any: "+err.Error())
		}
		b = buf.Bytes()
	default:
		panic(fmt.Errorf("display.Any: cannot render %T", data))
	}
	if mimeType == "" {
		mimeType = http.DetectContentType(b)
		if i := strings.IndexByte(mimeType, ';'); i >= 0 {
			mimeType = mimeType[:i]
		}
	}
	if strings.HasPrefix(mimeType, "text/") || mimeType == MIMETypeJavaScript {
		return MakeData(mimeType, string(b))
	}
	return binary(mimeType, b)
}

// Auto is Any with the MIME type detected from the content.
func Auto(data any) Data { return Any("", data) }

// File returns a bundle showing the file at path as mimeType (detected from
// the content when empty). It panics if the file cannot be read, as
// gophernotes does; the panic becomes the cell's error.
func File(mimeType string, path string) Data {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(fmt.Errorf("display.File: %w", err))
	}
	return Any(mimeType, b)
}

// binary returns a bundle for binary content with a short text/plain stand-in
// (the bytes themselves make no sense as text).
func binary(mimeType string, b []byte) Data {
	return MakeData3(mimeType, fmt.Sprintf("%s (%d bytes)", mimeType, len(b)), b)
}
