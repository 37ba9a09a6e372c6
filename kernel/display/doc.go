// Package display shows rich output (HTML, images, Markdown, LaTeX, JSON, …)
// in a Kiln notebook. It keeps the API of gophernotes' display package, so
// snippets written for gophernotes work unchanged.
//
// The functions HTML, Markdown, PNG, JPEG, SVG, JSON, JavaScript, Latex,
// Math, PDF, Image, Any and MIME build a [Data] bundle without showing it.
// A cell whose last expression is a Data shows it as the cell's result:
//
//	display.HTML(`<b>hello</b>`)
//
// To show something from the middle of a cell, from inside a loop or from a
// function, pass the bundle to [Display] (also predefined as the global
// Display in every cell, as in gophernotes). [New] shows a bundle and returns
// a [Handle] whose Update replaces it in place (Jupyter's display_id), which
// is how live charts refresh; [Clear] clears the cell's output:
//
//	h := display.New(display.Markdown("epoch 0"))
//	for epoch := 1; epoch <= 3; epoch++ {
//		h.Update(display.Markdown(fmt.Sprintf("epoch %d", epoch)))
//	}
//
// # Rich values
//
// A cell's last value is also shown richly when it implements one of the
// rendering interfaces: [MIMEr] (MIME() map[string]string, several MIME
// types at once), [HTMLer] (HTML() string), or gophernotes' [Renderer],
// [SimpleRenderer], [Markdowner], [SVGer], [PNGer], [JPEGer], [Latexer],
// [JSONer], [JavaScripter], [PDFer], or image.Image. Kiln's tensors, charts
// and tables implement these; so can types declared in a notebook cell. The
// plain-text form (text/plain) is always included: String() when the value
// has it, else fmt's %v. [Render] builds that bundle.
//
// # Where output goes
//
// Display, New, Handle.Update and Clear send a [Message] to the sink that the
// running kernel installed with [SetSink]. Outside a kernel (a plain Go
// program) there is no sink and they return [ErrNoSink].
//
// The package does not talk to Jupyter itself and does not encode images
// other than image.Image values (as PNG).
package display
