"""The 0.2 keyword forms, refused with the object form that replaces each.

Mechanisms and uncertainty sets are objects in the Python API (``jp.Dirichlet(k)``,
``jp.CertifiedSet(beta)``), and the options users set together are small objects
(``jp.SolverOptions``, ``jp.Chunking``, ``jp.privacy.Adjacency``). A call in the 0.2 form
(``k=``, ``beta=``, ``bound="certified"``, ``mechanism="gaussian"``, ``ks=``, ...) would
otherwise meet Python's bare "unexpected keyword argument"; :func:`refuses` makes it a
``TypeError`` that shows what to write instead. The command line keeps its flags and builds
the objects at its boundary.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

# Old keyword -> the object form that replaces it (shown in the refusal).
KEYWORDS: dict[str, str] = {
    "k": "a mechanism object: jp.Dirichlet(k) (or jp.Gaussian(sigma), jp.Laplace(scale))",
    "beta": "a set object: jp.PaperSet(beta), jp.ExactSet(beta) or jp.CertifiedSet(beta)",
    "support_aware": "the set object: jp.CertifiedSet(beta, support_aware=True)",
    "ks": "a grid object: jp.Dirichlet.grid(ks) (or jp.Gaussian.grid(sigmas))",
    "mechanism": "a mechanism object: jp.Dirichlet(k), jp.Gaussian(sigma), jp.Laplace(scale)",
    "bound": "a set object: jp.PaperSet(beta), jp.ExactSet(beta), jp.CertifiedSet(beta)",
    "sampler": "the mechanism object: jp.Dirichlet(k, sampler='fast')",
    "max_iterations": "options=jp.SolverOptions(max_iterations=...)",
    "tol": "options=jp.SolverOptions(tol=...)",
    "fill_width": "options=jp.SolverOptions(fill_width=...)",
    "batch_size": "chunking=jp.Chunking(batch_size=...)",
    "vector_width": "chunking=jp.Chunking(vector_width=...)",
    "devices": "chunking=jp.Chunking(devices=...)",
    "progress": "chunking=jp.Chunking(progress=...)",
    "b": "an adjacency object: jp.privacy.Adjacency(b, eta)",
    "eta": "an adjacency object: jp.privacy.Adjacency(b, eta)",
    "transitions": "a model: jp.make_mdp(...), jp.make_sparse_mdp(...) or jp.load_mdp(...)",
    "action_mask": "the model's own mask: jp.make_mdp(P, R, action_mask=...)",
}

# A mechanism's name -> its object form (also the refusals of jaxprivmdp.privacy).
MECHANISM_FORMS = {
    "dirichlet": "jp.Dirichlet(k)",
    "gaussian": "jp.Gaussian(sigma)",
    "laplace": "jp.Laplace(scale)",
}
_SET_NAMES = {
    "paper": "jp.PaperSet(beta)",
    "exact": "jp.ExactSet(beta)",
    "certified": "jp.CertifiedSet(beta)",
}


def mechanism_form(name, *, instance: bool = True) -> str:
    """The object form for a mechanism's name (``"jp.Gaussian(sigma)"``; with ``instance``
    False the class, ``"jp.Gaussian"``); the Dirichlet mechanism's for anything else."""
    form = MECHANISM_FORMS[
        name if isinstance(name, str) and name in MECHANISM_FORMS else "dirichlet"
    ]
    return form if instance else form.split("(")[0]


def refuses(*keywords: str) -> Callable:
    """Decorator: a call that passes any of ``keywords`` (0.2 names the function no longer
    takes) raises a ``TypeError`` naming the object form. Other calls go straight through;
    ``inspect.signature`` shows the function's own signature."""
    unknown = set(keywords) - set(KEYWORDS)
    if unknown:
        raise ValueError(f"no object form recorded for {sorted(unknown)}")

    def wrap(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        refused = frozenset(keywords) - set(signature.parameters)
        # A name the function still has, given twice (positionally, and as the 0.2 keyword:
        # ``privatize(key, mdp, 0.05, mechanism="gaussian")``), is refused the same way.
        position = {name: i for i, name in enumerate(signature.parameters) if name in keywords}

        @functools.wraps(fn)
        def call(*args, **kwargs):
            old = refused.intersection(kwargs)
            old |= {k for k, i in position.items() if k in kwargs and i < len(args)}
            if old:
                named = {k for k in position if isinstance(kwargs.get(k), str)}
                raise TypeError(message(fn.__qualname__, sorted(old | named), kwargs))
            return fn(*args, **kwargs)

        return call

    return wrap


def message(function: str, old: list[str], given: dict | None = None) -> str:
    """The refusal of ``function``'s 0.2 keywords ``old``, with their object forms."""
    keywords = ", ".join(f"{k}=" for k in old)
    lines = [f"{function}() no longer takes {keywords} (the 0.2 keyword form); pass instead"]
    for k in old:
        value = (given or {}).get(k)
        if k == "mechanism" and isinstance(value, str) and value in MECHANISM_FORMS:
            form = f"the mechanism object {MECHANISM_FORMS[value]}"
        elif k == "bound" and isinstance(value, str) and value in _SET_NAMES:
            form = f"the set object {_SET_NAMES[value]}"
        else:
            form = KEYWORDS[k]
        lines.append(f"  {k}=: {form}")
    return "\n".join(lines)


def mechanism_object(function: str, value, base: type, argument: str = "mechanism"):
    """``value`` if it is a ``base`` (a mechanism), else a TypeError with the object form:
    a name (``"gaussian"``) or a bare number (a 0.2 ``k``) is refused."""
    if isinstance(value, base):
        return value
    if isinstance(value, str) and value in MECHANISM_FORMS:
        form = MECHANISM_FORMS[value]
    elif isinstance(value, str):
        form = ", ".join(MECHANISM_FORMS.values())
    elif base.__name__ == "Dirichlet":
        form = f"jp.Dirichlet({value!r})"
    else:
        form = f"jp.Dirichlet({value!r}) (or jp.Gaussian(sigma), jp.Laplace(scale))"
    raise TypeError(
        f"{function}() takes the mechanism as an object, got {argument}={value!r}: pass {form}"
    )


def set_object(function: str, value, base: type):
    """``value`` if it is a ``base`` (an uncertainty set), else a TypeError with the object
    form (a set's name such as ``"certified"`` is refused)."""
    if isinstance(value, base):
        return value
    if isinstance(value, str) and value in _SET_NAMES:
        form = _SET_NAMES[value]
    else:
        form = ", ".join(_SET_NAMES.values())
    raise TypeError(f"{function}() takes the set as an object, got bound={value!r}: pass {form}")
