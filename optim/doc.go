// Package optim trains models: optimizers that update a model's parameters
// from the gradients Backward computed, gradient clipping, learning-rate
// schedules, and optimizer state that survives a checkpoint.
//
//	opt := optim.NewAdamW(optim.AdamWConfig{LR: 1e-3})
//	sched := optim.NewScheduler(opt, optim.NewCosineAnnealingLR(1e-3, steps, 0))
//	for range steps {
//		tensor.Scope(func() {
//			loss := lossOf(model)
//			opt.Step(model, loss.Backward())
//		})
//		sched.Step()
//	}
//
// # Optimizers
//
// SGD, Adam, AdamW, RMSProp, AdaGrad, RAdam, Adamax, ASGD (with its
// averaged iterate), SparseAdam and LBFGS (with the strong-Wolfe line
// search) follow torch.optim (PyTorch 1.13) step for step, every option
// included (momentum, dampening, Nesterov, AMSGrad, centered, weight
// decay, maximize); NAdam follows PyTorch 2.0 and Dozat's paper (1.13
// multiplies μₜ in twice, a bug 2.0 fixed); Adan follows the official
// implementation (sail-sg/Adan); Lion follows Chen et al. (2023) and Muon
// Keller Jordan's reference implementation. The tests compare 20-step
// trajectories with PyTorch's, or NumPy's for NAdam, Adan, Lion and Muon,
// to 1e-6 relative in float64 (they agree to about 1e-11).
//
// LBFGS re-evaluates the loss through a closure, LBFGS.StepClosure(model,
// func() *tensor.Tensor), and is not an Optimizer (schedules cannot drive
// it); its history and line search run on the host in float64.
// SparseAdam updates only the rows (slices along dimension 0) whose
// gradient is not all zero, as torch.optim.SparseAdam does for an
// embedding with sparse gradients: Kiln has no sparse tensors, so the
// update is computed densely and masked, which gives PyTorch's results,
// not its speed.
//
// Step(model, grads) updates every trainable parameter of model
// (nn.TrainableParams) that has a gradient, in place: the parameter's
// storage is overwritten (Tensor.Assign), so views of it, state dicts
// included, see the new values, and no graph is recorded. Per-parameter
// state (moments, momentum buffers, step counts) is keyed by Param.ID, so
// it follows a parameter through ToDevice and freezing; it lives outside
// any Scope until ZeroState frees it. Optimizers never modify the
// gradients they are given.
//
// Configurations are plain JSON-serialisable structs whose zero values
// mean PyTorch's defaults (each field documents its own), so a run's
// configuration can be saved with its checkpoints. Where 0 is a meaningful
// value that differs from the default, a separate field asks for it
// (AdamWConfig.NoWeightDecay) or the field is a slice or pointer whose
// absence means the default (Betas; ParamGroup's overrides; Patience).
// SGD's LR has no default, as in PyTorch. Constructors panic with an error
// wrapping ErrConfig for values that cannot work: these are programming
// errors, like a tensor op's shape errors.
//
// # Parameter groups
//
// A configuration's Groups give the parameters whose dotted names match a
// pattern (nn.Freeze's glob rules) their own learning rate, weight decay
// and other hyper-parameters; the first matching group wins and the rest
// of the parameters use the top-level values. A group whose pattern
// matches no parameter of the model makes Step panic (ErrConfig): it is
// nearly always a misspelt name. Group learning rates follow SetLR and
// schedules in proportion to the configured rate.
//
// # Clipping
//
// ClipGradNorm and ClipGradValue clip gradients in place as
// torch.nn.utils.clip_grad_norm_ and clip_grad_value_ do, without reading
// anything back to the host. A configuration's GradClip clips inside Step
// instead, on copies.
//
// # Schedules
//
// A Schedule is the learning rate as a function of the step; the
// schedules here follow torch.optim.lr_scheduler's classes of the same
// names (ConstantLR, StepLR, MultiStepLR, ExponentialLR, LinearLR,
// CosineAnnealingLR, CosineAnnealingWarmRestarts, SequentialLR,
// OneCycleLR), plus NoamLR. A Scheduler applies one to an optimizer and
// counts steps. ReduceLROnPlateau, driven by a metric, works on the
// optimizer directly.
//
// # State and checkpoints
//
// Optimizer.State returns the state keyed by parameter name (State):
// tensors, ready for a safetensors file, and a JSON-serialisable rest.
// LoadState restores it, in a fresh process, into a fresh optimizer: the
// continued run is bit-identical to an uninterrupted one. Schedulers and
// ReduceLROnPlateau keep their own small JSON states.
//
// # What it does not do
//
// Adam and AdamW step every parameter in one fused multi-tensor kernel
// where the backend offers one (tensor.AdamSteps; for float32 parameters
// with their scalars rounded to float32, as PyTorch's float32 kernels
// hold them, so that the CPU's kernel runs in float32 throughout), and SGD
// each parameter in one fused pass (tensor.SGDStep); the other optimizers
// are a handful
// of element-wise tensor ops per parameter. There are no
// sparse tensors (see SparseAdam) and no complex parameters; float16
// training scales the loss with GradScaler. Muon orthogonalises matrices
// only, in the parameter's dtype; everything else takes its AdamW
// fallback. Schedules set one rate that groups follow in proportion,
// rather than running per group as PyTorch does (the difference shows only
// for cosine annealing to a non-zero floor and OneCycleLR; see Schedule).
package optim
