"""The Recorder: evaluate probes on a fixed probe set on a schedule and store the results.

Inside your own training loop::

    with ncdynamics.runs.create("runs/mine") as run:   # completed on exit, failed on error
        rec = Recorder(run, x_probe, y_probe, probes=["collapse", "performance"])
        for epoch in range(n_epochs):
            ...                       # your training step(s)
            rec.step(model, epoch)    # records when the schedule says so

The Recorder writes into any *sink* with ``log(step, mapping)``, ``save_array(name, step,
array)`` and ``flush()``: a :class:`ncdynamics.runs.Run` is one. (In the layer order of
docs/architecture.md ``training`` and ``runs`` share a rank and import neither the other, so this
module does not import the run store.)

With ``background=True`` a record overlaps the training that follows it: :meth:`Recorder.record`
copies the model's parameters and buffers into a snapshot (a copy of the model made once) and
hands the probes to a recording thread (:mod:`.background`), which evaluates them on the
snapshot while the next epoch trains. Every write to the sink goes through that thread in
the order of the calls, so the records are the same, bit for bit, as in the synchronous
mode (tested). Use the Recorder as a context manager, or call :meth:`Recorder.close`, so
that the queued records are written and the thread stops, also when training raises; an
error in the thread is raised again in the training thread at the next call.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

from .._losses import canonical_loss
from .._validation import check_array, check_int, check_labels
from ..models.features import FeatureExtractor, find_classifier
from ..models.modes import eval_mode
from ..probes import Probe, ProbeInput, make_probe
from .background import BackgroundWorker
from .inputs import LabelledData, labelled_arrays

__all__ = [
    "Evaluation",
    "Recorder",
    "Schedule",
    "Sink",
    "canonical_loss_name",
    "optimizer_settings",
]

#: A further evaluation of the recorded model state: model -> scalars (e.g. the test-set loss).
Evaluation = Callable[[nn.Module], Mapping[str, float]]


class Sink(Protocol):
    """Where records go (a :class:`ncdynamics.runs.Run` is one)."""

    def log(self, step: int, values: Mapping[str, float]) -> None: ...

    def save_array(self, name: str, step: int, array: np.ndarray) -> object: ...

    def flush(self) -> None: ...


@dataclass(frozen=True)
class Schedule:
    """When to record: every ``every`` steps, or at an explicit set of ``steps``.

    Use :meth:`log_spaced` for roughly log-spaced steps (dense early, sparse late).
    """

    every: int | None = 1
    steps: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.steps is None:
            check_int(self.every, "every", low=1)

    @classmethod
    def log_spaced(cls, total: int, n_points: int) -> Schedule:
        """About ``n_points`` distinct steps in ``[0, total]``, log-spaced, 0 and total included."""
        total = check_int(total, "total", low=1)
        n_points = check_int(n_points, "n_points", low=2)
        pts = np.unique(np.round(np.geomspace(1, total + 1, n_points) - 1).astype(int))
        return cls(every=None, steps=tuple(int(p) for p in np.union1d(pts, [0, total])))

    def __contains__(self, step: int) -> bool:
        if self.steps is not None:
            return int(step) in self.steps
        if self.every is None:  # __post_init__ requires `every` when `steps` is None
            raise ValueError("`every` must be set when `steps` is None.")
        return int(step) % int(self.every) == 0


class Recorder:
    """Runs probes on a fixed probe set and writes them to a run directory.

    Parameters
    ----------
    run : Sink
        Where to write: a :class:`ncdynamics.runs.Run` (from ``ncdynamics.runs.create``).
    x : array_like or Tensor of shape (n_probe, *input_shape), or a labelled container
        The fixed probe inputs; or, with ``y`` left out, the whole probe set as a pair
        ``(x, y)``, an :class:`ncdynamics.data.Dataset` (its training split), a torch
        ``Dataset`` of ``(x, y)`` items or a ``DataLoader`` of ``(x, y)`` batches (read once;
        see :mod:`ncdynamics.training.inputs`).
    y : array_like or Tensor of shape (n_probe,), optional
        The labels of ``x`` when it is an array or a tensor.
    probes : sequence of str or Probe, default=("collapse", "performance")
        Registered probe names (see ``ncdynamics.probes.available_probes()``) or objects.
    schedule : Schedule or int, default=1
        An int means "every that many steps".
    num_classes : int, optional
        Defaults to ``max(y) + 1``.
    layer : str, optional
        Name of the classifier submodule, for models without ``features``/``classifier``.
    prefix : str, default=""
        Prepended to every metric and array name (e.g. ``"mse/"``).
    batch_size : int, default=1024
        Forward-pass batch size over the probe set.
    background : bool, default=False
        Evaluate the probes in a recording thread on a snapshot of the model, while
        training goes on (see the module docstring). Holds up to two copies of the model's
        parameters and buffers; :meth:`record` then returns an empty dict and :attr:`last`
        waits for the pending records. The results are identical to the synchronous mode's.
    optimizer : torch.optim.Optimizer, optional
        The training's optimizer. Its class and hyperparameters (``optimizer``, ``lr``,
        ``momentum``, ``nesterov``, ``weight_decay``, ``betas``, those it has) are recorded
        in the run's config (under ``config["streams"][name]`` with a ``prefix``, where the
        theories' regime checks read them), and its current learning rate as the scalar
        ``lr`` at every record (a schedule's drops show).
    loss : str or callable, optional
        The training loss: a name or the loss function or module (``"mse"``,
        ``torch.nn.functional.cross_entropy``, ``nn.MSELoss()``, ...), recorded as the
        setting ``loss`` under its canonical name (``"mse"``, ``"half-mse"``,
        ``"cross-entropy"``; another name as given).
    output : str, int or callable, optional
        Which part of the model's output holds the logits, for models that return a tuple,
        a list or a dict: a key, an index, or a function of the output. By default the
        output itself when it is a tensor, else its first tensor (a dict's ``"logits"``
        entry when it has one).
    """

    def __init__(
        self,
        run: Sink,
        x: ArrayLike | torch.Tensor | LabelledData,
        y: ArrayLike | torch.Tensor | None = None,
        *,
        probes: Sequence[str | Probe] = ("collapse", "performance"),
        schedule: Schedule | int = 1,
        num_classes: int | None = None,
        layer: str | None = None,
        prefix: str = "",
        batch_size: int = 1024,
        background: bool = False,
        optimizer: torch.optim.Optimizer | None = None,
        loss: str | Callable[..., object] | None = None,
        output: str | int | Callable[[object], torch.Tensor] | None = None,
    ) -> None:
        x, y = labelled_arrays(x, y, name="x")
        x_t = (
            x
            if isinstance(x, torch.Tensor)
            else torch.from_numpy(check_array(x, "x", min_size=1).astype(np.float32, copy=False))
        )
        if x_t.shape[0] == 0:
            raise ValueError("`x` must hold at least one probe sample; got an empty probe set.")
        y_np = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else y
        y_np = check_labels(y_np, "y", n_samples=x_t.shape[0], num_classes=num_classes)
        self.num_classes = num_classes if num_classes is not None else int(y_np.max()) + 1
        self.x, self.y = x_t, torch.from_numpy(y_np)
        self.probes = [make_probe(p) if isinstance(p, str) else p for p in probes]
        if not self.probes:
            raise ValueError("`probes` must name at least one probe.")
        self.schedule = schedule if isinstance(schedule, Schedule) else Schedule(every=schedule)
        self.extract = FeatureExtractor(layer=layer, output=_output_selector(output))
        self._checked_forward = False
        self.layer = layer
        self.prefix = prefix
        self.batch_size = check_int(batch_size, "batch_size", low=1)
        for method in ("log", "save_array", "flush"):
            if not callable(getattr(run, method, None)):
                raise TypeError(
                    f"`run` must be a run (ncdynamics.runs.create(...)) or another sink with "
                    f"log/save_array/flush; got {type(run).__name__} without `{method}`."
                )
        self.run = run
        self._last: dict[str, float] = {}
        self._inputs: dict[tuple[torch.device, torch.dtype], torch.Tensor] = {}
        self._checked_head = False  # the warning about NC3/NC4 is given once
        self.background = bool(background)
        self._worker: BackgroundWorker | None = None
        self._spare: list[nn.Module] = []  # snapshots not in use by a queued record
        self._snapshot_tensors: dict[int, list[torch.Tensor]] = {}  # id(snapshot) -> tensors
        self.optimizer: torch.optim.Optimizer | None = None
        settings: dict[str, object] = {}
        if loss is not None:
            settings["loss"] = canonical_loss_name(loss)
        if optimizer is not None:
            self.optimizer = _check_optimizer(optimizer)
            settings.update(optimizer_settings(optimizer))
        self._record_settings(settings)

    def use_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Record ``optimizer``'s settings and its ``lr`` from now on (the Lightning and
        Hugging Face callbacks call this with the trainer's optimizer at the start)."""
        self.optimizer = _check_optimizer(optimizer)
        self._record_settings(optimizer_settings(optimizer))

    def _record_settings(self, settings: Mapping[str, object]) -> None:
        """Hand ``settings`` to a sink that stores them (a run's config, a tracker's params)."""
        record = getattr(self.run, "record_settings", None)
        if settings and callable(record):
            record(settings, stream=self.prefix.rstrip("/.") or None)

    @property
    def last(self) -> dict[str, float]:
        """The scalars of the latest record (in background mode, after the pending ones)."""
        if self._worker is not None:
            self._worker.wait()
        return self._last

    @property
    def latest(self) -> dict[str, float]:
        """The scalars of the latest record written so far; never waits (a progress bar
        reads this one, so that it does not hold training up behind the recording thread)."""
        return dict(self._last)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        try:  # write what was queued; training's own error is the one to raise
            self.close()
        except Exception as err:  # noqa: BLE001 - reported beside the training error
            warnings.warn(
                f"the Recorder's last records failed while closing: {err!r}",
                RuntimeWarning,
                stacklevel=2,
            )

    def _submit(self, job: Callable[[], object]) -> None:
        """Run ``job`` now (synchronous mode) or queue it on the recording thread."""
        if not self.background:
            job()
            return
        if self._worker is None:
            self._worker = BackgroundWorker(max_pending=1)
        self._worker.submit(job)

    def _snapshot(self, model: nn.Module) -> nn.Module:
        """A copy of ``model`` with its current parameters and buffers (reused copies).

        A reused copy gets the values only: its own tensors are listed once (it is private to
        the Recorder), the model's are listed at every call (a layer the user replaced is
        seen), and the training modes are left as they are, since the probes run the copy in
        eval mode anyway.
        """
        snap = self._spare.pop() if self._spare else None
        if snap is not None:
            own = self._snapshot_tensors[id(snap)]
            with torch.no_grad():
                current = [*model.parameters(), *model.buffers()]
                if len(current) != len(own):
                    raise ValueError(
                        f"`model` has {len(current)} parameters and buffers, but {len(own)} "
                        "when the Recorder first copied it; record one model per Recorder."
                    )
                torch._foreach_copy_(own, current)
            return snap
        with torch.no_grad():
            snap = copy.deepcopy(model)
        for q in snap.parameters():
            q.grad = None  # probes that differentiate (kernels) start from no gradient
        self._snapshot_tensors[id(snap)] = [*snap.parameters(), *snap.buffers()]
        return snap

    def _forward(self, model: nn.Module) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
        xs = self._inputs.get((device, dtype))
        if xs is None:  # converted once per device and dtype
            xs = self._inputs[device, dtype] = self.x.to(device=device, dtype=dtype)
        with torch.no_grad():
            if xs.shape[0] <= self.batch_size:  # the usual probe set: one batch, no copy
                return (xs, *self._extract(model, xs))
            feats, logits = [], []
            for s in range(0, xs.shape[0], self.batch_size):
                h, out = self._extract(model, xs[s : s + self.batch_size])
                feats.append(h)
                logits.append(out)
            return xs, torch.cat(feats), torch.cat(logits)

    def _extract(self, model: nn.Module, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Features and logits of ``xs``; a layer given inputs of the wrong width is named."""
        try:
            return self.extract(model, xs)
        except RuntimeError as err:
            mismatch = _width_mismatch(model, xs)
            if mismatch is None:
                raise
            raise ValueError(
                f"{mismatch}, from the probe inputs `x` of shape {tuple(self.x.shape)}; "
                "pass `x` shaped as the model's training inputs, or `layer=` naming the "
                f"classifier whose input is the feature vector (torch: {str(err).splitlines()[0]})."
            ) from None

    def record(
        self,
        model: nn.Module,
        step: int,
        *,
        evaluate: Evaluation | None = None,
        **extra: float,
    ) -> dict[str, float]:
        """Evaluate every probe (model in eval mode) and store the results.

        ``extra`` scalars (e.g. the training loss) are stored with them. ``evaluate``, if
        given, is called (in eval mode) on the same model state after the probes; its
        scalars are stored at the same step and merged into :attr:`last`. The training loop
        passes the test-set loss and accuracy this way, so that in background mode they too
        are computed on the snapshot, by the recording thread. Returns the probes' scalars;
        in background mode the probes run later, on a snapshot taken now, and this returns
        an empty dict (read :attr:`last`, which waits for them).
        """
        if self.optimizer is not None and "lr" not in extra:  # the rate now, not when run
            extra = {**extra, "lr": float(self.optimizer.param_groups[0]["lr"])}
        if not self.background or not self._checked_head:
            # the first record runs here: its warning about the head points at the caller
            if self._worker is not None:
                self._worker.wait()
            scalars = self._record(model, step, extra)
            self._evaluate(evaluate, model, step)
            return scalars
        snap = self._snapshot(model)

        def job() -> None:
            try:
                self._record(snap, step, extra)
                self._evaluate(evaluate, snap, step)
            finally:
                self._spare.append(snap)

        self._submit(job)
        return {}

    def _evaluate(self, evaluate: Evaluation | None, model: nn.Module, step: int) -> None:
        """Store ``evaluate(model)``'s scalars at ``step`` and merge them into ``last``."""
        if evaluate is None:
            return
        with eval_mode(model):  # as the probes: the snapshot's own modes must not matter
            values = {f"{self.prefix}{k}": float(v) for k, v in evaluate(model).items()}
        self.run.log(step, values)
        self._persist()
        self._last.update(values)

    def _record(self, model: nn.Module, step: int, extra: Mapping[str, float]) -> dict[str, float]:
        """The probes on ``model`` and the writes to the sink (the calling thread)."""
        with eval_mode(model):
            xs, features, logits = self._forward(model)
            classifier = find_classifier(model, self.layer)
            inp = ProbeInput(
                model=model,
                x=xs,
                y=self.y.to(xs.device),
                features=features.cpu(),
                logits=logits.cpu(),
                classifier=classifier if isinstance(classifier, nn.Linear) else None,
                num_classes=self.num_classes,
                step=int(step),
                feature_fn=self.extract,
            )
            if not self._checked_head:
                self._warn_about_head(classifier, features.shape[1])
            scalars: dict[str, float] = {f"{self.prefix}{k}": float(v) for k, v in extra.items()}
            for probe in self.probes:
                out = probe(inp)
                scalars.update({f"{self.prefix}{k}": v for k, v in out.scalars.items()})
                for name, arr in out.arrays.items():
                    self.run.save_array(f"{self.prefix}{name}".replace("/", "."), step, arr)
        self.run.log(step, scalars)
        self._persist()
        self._last = scalars
        return scalars

    def _persist(self) -> None:
        """Put the sink's records on disk now, where it can (a run appends them to its
        journal: a killed training keeps every record made before the kill)."""
        persist = getattr(self.run, "persist", None)
        if callable(persist):
            persist()

    def _warn_about_head(self, classifier: nn.Module, n_features: int) -> None:
        """Warn once when the collapse probe cannot compare the class means with the head."""
        self._checked_head = True
        if not any(getattr(p, "name", None) == "collapse" for p in self.probes):
            return
        expected = (self.num_classes, n_features)
        name = self.layer if self.layer is not None else "classifier"
        if not isinstance(classifier, nn.Linear):
            got = f"is a {type(classifier).__name__}, not a Linear layer"
        elif tuple(classifier.weight.shape) != expected:
            got = f"has a weight of shape {tuple(classifier.weight.shape)}"
        else:
            return
        warnings.warn(
            f"layer {name!r} {got}; NC3 and NC4 compare the class means with the rows of a "
            f"weight of shape {expected} ({self.num_classes} classes, {n_features} features), "
            "so they are not recorded (NC1 and NC2 are). Pass `layer=` naming the final "
            f"Linear layer (the one with {self.num_classes} outputs) to record them.",
            UserWarning,
            stacklevel=4,  # the caller of record() (record -> _record -> this helper)
        )

    def step(
        self,
        model: nn.Module,
        step: int,
        *,
        evaluate: Evaluation | None = None,
        **extra: float,
    ) -> dict[str, float] | None:
        """Record if ``step`` is in the schedule (see :meth:`record`); returns the scalars or
        ``None``."""
        if step in self.schedule:
            return self.record(model, step, evaluate=evaluate, **extra)
        return None

    def log(self, step: int, **scalars: float) -> None:
        """Store extra scalars (with the prefix) without running probes."""
        values = {f"{self.prefix}{k}": v for k, v in scalars.items()}
        self._submit(lambda: self.run.log(step, values))

    def wait(self) -> None:
        """Block until the pending records are written (background mode); raises their error."""
        if self._worker is not None:
            self._worker.wait()

    def close(self) -> None:
        """Write the pending and buffered records; stop the recording thread."""
        worker, self._worker = self._worker, None
        try:
            if worker is not None:
                worker.close()  # runs the queued records; raises their error
        finally:
            self.run.flush()  # the thread has stopped: the sink is this thread's again


#: Loss names as the theories' regime checks read them ("mse", "half-mse", "cross-entropy");
#: the spellings of torch and of common configs map onto them. This mirrors the regime
#: vocabulary of ``ncdynamics.theories``.
def canonical_loss_name(loss: str | Callable[..., object]) -> str:
    """The name under which ``loss`` is recorded: ``"mse"``, ``"half-mse"``,
    ``"cross-entropy"``, or for another loss its own name, lower case and hyphenated.

    ``loss`` is a name (``"MSE"``, ``"cross_entropy"``), a loss module (``nn.MSELoss()``,
    ``nn.CrossEntropyLoss()``) or a function (``torch.nn.functional.mse_loss``).
    """
    if isinstance(loss, str):
        raw = loss
    elif isinstance(loss, nn.Module):
        raw = type(loss).__name__
    elif callable(loss):
        raw = getattr(loss, "__name__", type(loss).__name__)
    else:
        raise TypeError(
            f"`loss` must be a loss name, function or module; got {type(loss).__name__}."
        )
    import re

    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", raw.strip())  # CrossEntropy -> Cross-Entropy
    name = re.sub(r"[\s_]+", "-", name.lower())
    name = re.sub(r"-?loss$", "", name) or name
    if not name:
        raise ValueError(f"`loss` must name a loss; got {loss!r}.")
    return canonical_loss(name) or name


def _check_optimizer(optimizer: object) -> torch.optim.Optimizer:
    """``optimizer``, or the one a trainer's wrapper holds (Accelerate's, Lightning's)."""
    for _ in range(4):
        inner = getattr(optimizer, "optimizer", None) or getattr(optimizer, "_optimizer", None)
        if not isinstance(inner, torch.optim.Optimizer) or inner is optimizer:
            break
        optimizer = inner
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"`optimizer` must be a torch.optim.Optimizer; got {type(optimizer).__name__}."
        )
    return optimizer


def optimizer_settings(optimizer: torch.optim.Optimizer) -> dict[str, object]:
    """The settings of ``optimizer`` that a theory's regime reads: ``optimizer`` (its class
    name, ``"SGD"``, ``"Adam"``), and from its first parameter group those of ``lr``,
    ``momentum``, ``nesterov``, ``weight_decay`` and ``betas`` it has (the rate at the start;
    the Recorder records the current one at every record)."""
    optimizer = _check_optimizer(optimizer)
    group = optimizer.param_groups[0]
    out: dict[str, object] = {"optimizer": type(optimizer).__name__}
    for key in ("lr", "momentum", "nesterov", "weight_decay", "betas"):
        if key not in group:
            continue
        value = group[key]
        if isinstance(value, torch.Tensor):
            value = value.tolist()
        if key == "betas":
            out[key] = [float(b) for b in value]
        elif key == "nesterov":
            out[key] = bool(value)
        else:
            out[key] = float(value)
    return out


def _output_selector(
    output: str | int | Callable[[object], torch.Tensor] | None,
) -> Callable[[object], torch.Tensor]:
    """The function taking a model's output to its logits (see ``Recorder(output=...)``)."""
    if output is not None and not (
        isinstance(output, (str, int)) and not isinstance(output, bool) or callable(output)
    ):
        raise TypeError(
            f"`output` must be a key, an index or a function of the model's output; got "
            f"{type(output).__name__}."
        )

    def select(out: object) -> torch.Tensor:
        value: object
        if callable(output):
            value = output(out)
        elif output is None:
            value = _first_tensor(out)
        else:
            try:
                value = out[output]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                kind = type(out).__name__
                raise ValueError(
                    f"`output` {output!r} selects nothing in the model's output (a {kind}"
                    f"{_keys(out)}); pass the key or index of the logits."
                ) from None
        if not isinstance(value, torch.Tensor):
            raise ValueError(
                f"`output` must select the logits tensor of the model's output; got a "
                f"{type(value).__name__} (the output is a {type(out).__name__}{_keys(out)})."
            )
        return value

    return select


def _keys(out: object) -> str:
    if isinstance(out, Mapping):
        return f" with keys {', '.join(map(repr, list(out)[:8]))}"
    if isinstance(out, (tuple, list)):
        return f" of {len(out)} items"
    return ""


def _first_tensor(out: object) -> object:
    """The output itself if it is a tensor; else a dict's ``"logits"`` or first tensor, or a
    tuple's or list's first tensor; else the output unchanged (reported by the caller)."""
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(getattr(out, "logits", None), torch.Tensor):  # a Hugging Face ModelOutput
        return out.logits  # type: ignore[attr-defined]
    if isinstance(out, Mapping):
        if isinstance(out.get("logits"), torch.Tensor):
            return out["logits"]
        items: Sequence[object] = list(out.values())
    elif isinstance(out, (tuple, list)):
        items = out
    else:
        return out
    return next((v for v in items if isinstance(v, torch.Tensor)), out)


def _width_mismatch(model: nn.Module, xs: torch.Tensor) -> str | None:
    """Run ``model`` on ``xs`` again with a check on every Linear and convolution layer; the
    first one that receives inputs of a width it does not take, in words, or ``None``."""
    found: list[str] = []
    handles = []

    def check(name: str, module: nn.Module) -> Callable[..., None]:
        def hook(_m: nn.Module, inputs: tuple[object, ...]) -> None:
            h = inputs[0] if inputs else None
            if found or not isinstance(h, torch.Tensor) or h.ndim == 0:
                return
            if isinstance(module, nn.Linear):
                width, want, what = h.shape[-1], module.in_features, "features"
            elif isinstance(module, nn.modules.conv._ConvNd):
                width, want, what = h.shape[1] if h.ndim > 1 else -1, module.in_channels, "channels"
            else:
                return
            if width != want:
                kind = type(module).__name__
                found.append(
                    f"layer {name!r} ({kind} with {want} input {what}) received inputs with "
                    f"{width} {what}"
                )
                raise _Found

        return hook

    for name, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.modules.conv._ConvNd)):
            handles.append(module.register_forward_pre_hook(check(name, module)))
    try:
        with torch.no_grad():
            model(xs)
    except Exception:  # noqa: BLE001, S110 - _Found, or the model's own error: found tells
        pass
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None


class _Found(Exception):
    """Stops the diagnostic forward pass at the first mismatching layer."""
