"""A release's record: what ``jaxprivmdp privatize`` stores about a release beside the
released model, and reading it back.

An ``.npz`` release holds its record as arrays beside the model's (one per field); a
``.drn``/``.tra`` release, whose formats have no place for it, in the ``"metadata"`` object
of its JSON sidecar ``<file>.json`` (with the horizon and discount those formats cannot
hold either). :func:`jaxprivmdp.io._load.release_record` reads either.
"""

from __future__ import annotations

import json

import numpy as np

from ._files import sidecar_path

# The fields of a release's record: its mechanism, the mechanism's parameter (under its own
# name) and guarantee, the adjacency it was accounted under and what the accounting of the
# release later needs. In an .npz they are checked, and loaded only when asked for.
RELEASE_METADATA = (
    "mechanism",
    "k",
    "sigma",
    "scale",
    "epsilon",
    "delta",
    "b",
    "adjacency",
    "eta",  # the public lower bound the rows were verified against when privatized
    "target_epsilon",
    "seed",  # a test's release, from a known seed: not private
    "randomness",  # "secure" (OS entropy) or "seed"
    "support_option",  # privatize's --support ("nonzero") when given
    "smoothing",
    "private_row_sizes",  # [[n, rows with n entries], ...]: what a ledger needs
)


def record_from_arrays(arrays: dict) -> dict:
    """The record an ``.npz``'s arrays hold, as JSON values (empty if none): strings,
    Python numbers, and ``private_row_sizes`` as ``[[n, count], ...]``."""
    out = {}
    for name in RELEASE_METADATA:
        if name not in arrays:
            continue
        value = np.asarray(arrays[name])
        if name == "private_row_sizes":
            out[name] = value.astype(np.int64).reshape(-1, 2).tolist()
        elif value.dtype.kind == "U":
            out[name] = str(value)
        else:
            out[name] = value.item()
    if "mechanism" not in out and "k" in out:  # a release of 0.2 was Dirichlet's
        out["mechanism"] = "dirichlet"
    return out


def read_sidecar(path) -> dict | None:
    """The sidecar :func:`jaxprivmdp.io.save_mdp` wrote beside ``path`` (None where there is
    none).

    Raises:
      ValueError: a sidecar that is not such a JSON object.
    """
    side = sidecar_path(path)
    if not side.is_file():
        return None
    try:
        body = json.loads(side.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{str(side)!r} is not a readable JSON file: {e}") from None
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        raise ValueError(f'{str(side)!r} holds no "metadata" object (not a jaxprivmdp sidecar)')
    return body
