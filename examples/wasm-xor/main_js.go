//go:build js

package main

import (
	"encoding/json"
	"syscall/js"
	"time"
)

// main trains in the page and hands every step's loss to the loader's
// kilnXor.step(step, loss), then the whole result to kilnXor.done(json).
// A loader that did not define kilnXor gets an error on the console.
func main() {
	page := js.Global().Get("kilnXor")
	if page.Type() != js.TypeObject {
		js.Global().Get("console").Call("error", "wasm-xor: the page defines no kilnXor object (load it with loader.js)")
		return
	}
	res := train(steps, func(step int, loss float64) {
		page.Call("step", step, loss)
		if step%10 == 9 {
			// Sleeping hands the thread back to the browser's event loop,
			// so the page redraws while training runs.
			time.Sleep(time.Millisecond)
		}
	})
	b, err := json.Marshal(res)
	if err != nil {
		page.Call("fail", err.Error())
		return
	}
	page.Call("done", string(b))
}
