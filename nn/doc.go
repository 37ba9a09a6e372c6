// Package nn is Kiln's module system: parameters, and the reflection that
// finds them in any model struct, names them, freezes them, switches modes,
// moves them between devices, saves and restores them as state dicts, and
// summarises a model. Layers, losses and initializers build on it.
//
// A model is a plain Go struct. Its exported fields hold *Param values
// (NewParam for trainable tensors, NewBuffer for saved state that is not
// trained), other modules, and slices, arrays and maps of them:
//
//	type MLP struct {
//		W1, W2 *nn.Param
//		Blocks []*Block
//	}
//
// Params finds every parameter with a PyTorch-style dotted name
// ("Blocks.0.Attn.Weight"); a `kiln:"name"` tag renames a field and
// `kiln:"-"` hides it. The same names key StateDict, LoadStateDict, Freeze
// patterns ("Blocks.**") and Summary, so a Kiln model whose fields follow
// PyTorch's names and layouts exchanges weights with PyTorch one to one.
// Structs declared in notebook cells (interpreted by yaegi) are walked the
// same way, their unexported fields included.
//
// # Interpreted models
//
// yaegi, which runs notebook cells, builds the struct types of interpreted
// code with reflect.StructOf: they are unnamed, and since StructOf accepts
// only exported field names, yaegi prefixes unexported ones with "X"
// (weight becomes Xweight, _bias becomes X_bias). nn undoes that with a
// heuristic: in an unnamed struct type, a field name made of X followed by
// an underscore or by a letter that is not upper case loses the X, so
// `type MLP struct { l1 *nn.Param; Hidden []*nn.Param }` gives the names
// "l1" and "Hidden.0". An interpreted field really named like Xavier would
// lose its X too; a `kiln:"Xavier"` tag names it exactly. Fields whose type
// is an interface declared in interpreted code are followed as well, and an
// embedded field of an interpreted struct with other fields is not
// flattened (yaegi does not mark it embedded), so its type name becomes a
// path segment. An interpreted value held where a compiled interface is
// expected (a layer in a Sequential, a field of type Module) reaches nn in
// a wrapper struct of yaegi's; nn walks what the wrapper holds, under the
// same name, and calls the wrapper's methods for the modes.
//
// # Parameters and gradients
//
// A Param embeds its *tensor.Tensor, so layer code calls tensor methods on
// it directly. On an autodiff device a trainable parameter requires
// gradients; a frozen one (Freeze, Param.SetFrozen) does not, so Backward
// skips it entirely; buffers never do. Each Param has a stable ID that
// survives Set, ToDevice and freezing, for optimizer state.
//
// # Memory
//
// The tensors you hand to NewParam and Param.Set follow the tensor
// package's rules: a Scope releases the tensors created inside it, so
// build models outside the Scopes of training steps. The tensors nn itself
// creates for a model (ToDevice's copies, the views that freezing makes)
// belong to the model and survive any Scope; Release(m) frees a model's
// memory at once. StateDict returns views owned by the caller.
//
// # Errors
//
// Functions that touch devices or external state return errors
// (ToDevice; LoadStateDict with ErrStateDict, naming every offending key,
// and loading nothing unless everything fits). Programming errors panic:
// a nil or released tensor given to NewParam (a *tensor.Error), a malformed
// Freeze pattern, an unaddressable mode-carrying module given to Train or
// Eval (ErrModule).
//
// # What it does not do
//
// nn walks exported fields only (and the renamed unexported fields of
// interpreted structs); it finds *Param values, not bare *tensor.Tensor
// fields. A parameter shared by two modules is listed once, under its first
// name, so a state dict that lists tied weights under both names needs
// LoadStateDictPartial. Methods of interpreted types are invisible to
// reflection, so Train and Eval reach only compiled modules (including
// compiled modules and nn.Mode embedded in interpreted structs) and
// interpreted ones that yaegi passes in a wrapper: the model given to
// Train or Eval itself, and values held in a compiled interface (the
// kernel's symbol tables arrange both); an interpreted module with its own
// SetTraining in a plain field of an interpreted struct is not reached.
package nn
