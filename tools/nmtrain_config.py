"""A run's YAML config as the tools read it: the file, then `section.key=value` overrides as
the C++ executables take them (config/config_loader.cpp; the value is YAML, so `true`, `0.5`
and `[a, b]` mean what they mean in the file). Which keys exist is the executables' business:
the tools read only the few keys they use, and refuse only what they cannot read."""
import os

import yaml

from nmtrain_checkpoint import BadInput


def read_config(path, overrides=()):
    if not os.path.isfile(path):
        raise BadInput(f"{path}: config file does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        raise BadInput(f"{path}: not a readable YAML config ({type(e).__name__})") from None
    if not isinstance(config, dict):
        raise BadInput(f"{path}: not a YAML mapping of sections")
    for override in overrides:
        apply_override(config, override)
    return config


def apply_override(config, override):
    name, eq, text = override.partition("=")
    section, dot, key = name.partition(".")
    if not eq or not dot or not section or not key or "." in key:
        raise BadInput(f"override '{override}': not of the form section.key=value")
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        raise BadInput(f"override '{override}': the value is not YAML") from None
    if not isinstance(config.setdefault(section, {}), dict):
        raise BadInput(f"override '{override}': section '{section}' of the config is not a mapping")
    config[section][key] = value
