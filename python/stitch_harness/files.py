"""Atomic file writes: every file appears complete under its final name or not at all.

Each writer writes to a temporary name in the same directory and renames it over the target
(rename is atomic within one file system), so a reader never sees a half-written file.
"""
import json
import math
import os
import tempfile


def _current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _temp_path(path):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    return temp


def write_atomically(path, write_to):
    """Call write_to(temp_path), then rename the temporary file to `path`."""
    temp = _temp_path(path)
    try:
        write_to(temp)
        os.chmod(temp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def json_safe(value):
    """Make a value JSON-encodable per docs/graph-format.md: non-finite floats become
    {"float": "inf"} objects, tuples become lists (strict JSON has no NaN/Infinity)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def dumps_json(value, indent=None):
    # allow_nan=False: a non-finite float that escaped json_safe is a bug, not a file to write.
    return json.dumps(json_safe(value), indent=indent, allow_nan=False) + "\n"


def write_json(path, value, indent=1):
    text = dumps_json(value, indent=indent)

    def write(temp):
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(text)

    write_atomically(path, write)


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> CPU tensor. Tensors sharing storage are copied (safetensors refuses them)."""
    import safetensors.torch

    seen_storages = set()
    prepared = {}
    for name, tensor in tensors.items():
        tensor = tensor.detach().to("cpu").contiguous()
        if tensor.numel():
            storage = tensor.untyped_storage()
            shared = storage.data_ptr() in seen_storages or storage.nbytes() != tensor.nbytes
            if shared:
                tensor = tensor.clone()
            else:
                seen_storages.add(storage.data_ptr())
        prepared[name] = tensor
    write_atomically(path, lambda temp: safetensors.torch.save_file(prepared, temp, metadata=metadata))


def remove_if_present(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
