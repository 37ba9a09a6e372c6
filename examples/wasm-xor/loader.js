// loader.js starts xor.wasm with Go's wasm_exec.js and draws what it
// reports. The Go program calls window.kilnXor.step(step, loss) after each
// training step and window.kilnXor.done(json) at the end; failures land in
// kilnXor.error. Tests read kilnXor.finished, kilnXor.losses and
// kilnXor.result.
(function () {
  "use strict";
  var status = document.getElementById("status");
  var line = document.getElementById("loss-line");
  var curve = document.getElementById("curve");
  var steps = 300; // the width of the plot, in steps; it grows if needed

  function fail(message) {
    window.kilnXor.error = String(message);
    status.textContent = "error: " + message;
    status.className = "error";
  }

  function draw(losses) {
    var top = losses[0] || 1;
    if (losses.length > steps) {
      steps = losses.length;
      curve.setAttribute("viewBox", "0 0 " + steps + " 100");
    }
    line.setAttribute("points", losses.map(function (l, i) {
      return i + "," + (100 - 100 * Math.min(l / top, 1)).toFixed(2);
    }).join(" "));
  }

  window.kilnXor = {
    losses: [],
    finished: false,
    result: null,
    error: null,
    step: function (step, loss) {
      this.losses.push(loss);
      status.textContent = "step " + (step + 1) + ": loss " + loss.toFixed(4);
      draw(this.losses);
    },
    done: function (json) {
      var res = JSON.parse(json);
      var targets = [0, 1, 1, 0];
      var body = document.querySelector("#outputs tbody");
      res.outputs.forEach(function (p, i) {
        var tr = document.createElement("tr");
        [i >> 1, i & 1, targets[i], p.toFixed(3)].forEach(function (v) {
          var td = document.createElement("td");
          td.textContent = v;
          tr.appendChild(td);
        });
        body.appendChild(tr);
      });
      document.getElementById("outputs").hidden = false;
      status.textContent = "trained " + res.losses.length + " steps: loss " +
        res.losses[0].toFixed(4) + " → " + res.losses[res.losses.length - 1].toFixed(4);
      this.result = res;
      this.finished = true;
    },
    fail: fail
  };

  if (typeof Go !== "function") {
    fail("wasm_exec.js did not load (copy it from $(go env GOROOT)/lib/wasm)");
    return;
  }
  var go = new Go();
  function instantiate() {
    if (WebAssembly.instantiateStreaming) {
      return WebAssembly.instantiateStreaming(fetch("xor.wasm"), go.importObject).catch(function () {
        // A server that does not send application/wasm: compile from bytes.
        return fetch("xor.wasm").then(bytes);
      });
    }
    return fetch("xor.wasm").then(bytes);
  }
  function bytes(resp) {
    if (!resp.ok) {
      throw new Error("xor.wasm: HTTP " + resp.status);
    }
    return resp.arrayBuffer().then(function (b) {
      return WebAssembly.instantiate(b, go.importObject);
    });
  }
  instantiate().then(function (obj) {
    status.textContent = "training…";
    return go.run(obj.instance);
  }).then(function () {
    if (!window.kilnXor.finished && !window.kilnXor.error) {
      fail("the Go program ended without reporting a result");
    }
  }).catch(fail);
})();
