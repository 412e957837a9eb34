"""A job folder's ``requirements.txt`` installed for Lambda without Docker: wheels for the target, cached,
refused in one line when it cannot work (``tiered_jobs.cdk.dependencies``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from tests.support.packages import (
    BINARY,
    EM_AARCH64,
    EM_X86_64,
    PURE,
    REQUIREMENTS,
    elf_machine,
    package_cache,
    shared_objects,
    write_sdist,
    write_wheel,
)
from tiered_jobs.cdk import dependencies
from tiered_jobs.cdk.dependencies import DependencyError, Target, cache_key, check_requirements, install
from tiered_jobs.cdk.settings import AppSettings

ARM = Target.lambda_runtime("python3.13", "arm64")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return package_cache(tmp_path_factory)


def _requirements(tmp_path, text=REQUIREMENTS):
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("architecture", "machine"), [("arm64", EM_AARCH64), ("x86_64", EM_X86_64)])
def test_a_binary_package_is_built_for_the_functions_architecture_not_the_hosts(tmp_path, cache, architecture, machine):
    installed = install(_requirements(tmp_path), Target.lambda_runtime("python3.13", architecture), cache=cache)
    objects = shared_objects(installed.python_dir)
    assert objects, f"{BINARY} shipped no extension module"
    assert {elf_machine(path) for path in objects} == {machine}
    assert all("cpython-313" in path.name for path in objects)  # the runtime's Python, not this one's 3.11
    assert not list(installed.python_dir.rglob("*.pyc"))  # bytecode of this Python would be useless there


def test_a_pure_python_package_lands_in_the_layers_python_folder(tmp_path, cache):
    installed = install(_requirements(tmp_path), ARM, cache=cache)
    assert (installed.python_dir / "humanize" / "__init__.py").is_file()
    assert not shared_objects(installed.python_dir / "humanize")
    # Real code: importable from the layer's folder alone (it is not in this environment).
    probe = "import sys; sys.path.insert(0, sys.argv[1]); import humanize; print(humanize.intcomma(1234567))"
    result = subprocess.run(
        [sys.executable, "-I", "-B", "-c", probe, str(installed.python_dir)], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "1,234,567"
    assert installed.size == dependencies.tree_size(installed.directory) > 0


def test_an_unchanged_install_comes_from_the_cache_without_pip(tmp_path, cache, monkeypatch):
    first = install(_requirements(tmp_path), ARM, cache=cache)

    def no_pip(*args, **kwargs):
        raise AssertionError(f"pip ran on a cache hit: {args}")

    monkeypatch.setattr(dependencies.subprocess, "run", no_pip)
    again = install(_requirements(tmp_path), ARM, cache=cache)
    assert (again.directory, again.key, again.cached) == (first.directory, first.key, True)


def test_the_key_changes_with_the_requirements_the_runtime_the_architecture_and_pips_options():
    key = cache_key(REQUIREMENTS, ARM)
    assert key == cache_key(REQUIREMENTS, Target.lambda_runtime("python3.13", "arm64"))
    others = {
        cache_key(REQUIREMENTS + "idna==3.10\n", ARM),
        cache_key(REQUIREMENTS, Target.lambda_runtime("python3.12", "arm64")),
        cache_key(REQUIREMENTS, Target.lambda_runtime("python3.13", "x86_64")),
        cache_key(REQUIREMENTS, ARM, ["--no-index"]),
        cache_key(REQUIREMENTS, Target.host()),
    }
    assert key not in others and len(others) == 5


def test_the_platform_tags_follow_the_runtimes_glibc():
    """Every glibc from the oldest manylinux of the machine to the runtime's own, newest first (pip's order of
    preference), each also under its legacy alias (PEP 600)."""
    al2 = Target.lambda_runtime("python3.11", "arm64").platforms
    assert al2 == (*(f"manylinux_2_{minor}_aarch64" for minor in range(26, 16, -1)), "manylinux2014_aarch64")
    al2023 = Target.lambda_runtime("python3.13", "x86_64").platforms
    assert al2023[:3] == ("manylinux_2_34_x86_64", "manylinux_2_33_x86_64", "manylinux_2_32_x86_64")
    assert al2023[-3:] == ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
    assert {"manylinux_2_17_x86_64", "manylinux_2_12_x86_64", "manylinux_2_5_x86_64"} <= set(al2023)
    assert "manylinux_2_35_x86_64" not in al2023 and "manylinux_2_16_aarch64" not in al2


@pytest.mark.parametrize(
    ("runtime", "architecture", "tag"),
    [
        # pip's --platform takes each tag literally: given only manylinux2014 / 2_28 / 2_34 it refused these.
        ("python3.13", "arm64", "manylinux_2_17_aarch64"),
        ("python3.13", "arm64", "manylinux_2_24_aarch64"),
        ("python3.11", "arm64", "manylinux_2_26_aarch64"),
        ("python3.13", "x86_64", "manylinux_2_12_x86_64"),
    ],
)
def test_a_wheel_for_an_older_glibc_than_the_runtimes_is_installed(tmp_path, runtime, architecture, tag):
    links = tmp_path / "links"
    python = runtime.removeprefix("python").replace(".", "")
    write_wheel(links, f"cp{python}-cp{python}-{tag}")
    installed = install(
        _requirements(tmp_path, "onlytagged==1.0\n"),
        Target.lambda_runtime(runtime, architecture),
        cache=tmp_path / "cache",
        pip_options=["--no-index", f"--find-links={links}"],
    )
    assert (installed.python_dir / "onlytagged.py").is_file()


@pytest.mark.parametrize(
    ("runtime", "tag"), [("python3.11", "manylinux_2_28_aarch64"), ("python3.13", "manylinux_2_35_aarch64")]
)
def test_a_wheel_for_a_newer_glibc_than_the_runtimes_is_refused(tmp_path, runtime, tag):
    links = tmp_path / "links"
    python = runtime.removeprefix("python").replace(".", "")
    write_wheel(links, f"cp{python}-cp{python}-{tag}")
    with pytest.raises(DependencyError, match=r"no wheel of 'onlytagged==1\.0' for python3\.1\d on arm64"):
        install(
            _requirements(tmp_path, "onlytagged==1.0\n"),
            Target.lambda_runtime(runtime, "arm64"),
            cache=tmp_path / "cache",
            pip_options=["--no-index", f"--find-links={links}"],
        )


def test_a_package_with_no_wheel_is_refused_in_one_line_and_leaves_no_cache_entry(tmp_path):
    links = tmp_path / "links"
    write_sdist(links)
    cache = tmp_path / "cache"
    with pytest.raises(DependencyError) as refused:
        install(
            _requirements(tmp_path, "onlysource==1.0\n"),
            ARM,
            cache=cache,
            pip_options=["--no-index", f"--find-links={links}"],
        )
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'requirements.txt'}: no wheel of 'onlysource==1.0' for python3.13 on arm64")
    assert "a manylinux aarch64 wheel for cp313" in message and "change 'architecture'" in message
    assert list(cache.iterdir()) == []  # neither an entry nor a scratch folder


def test_the_refusal_carries_no_colour_codes_when_the_cdk_cli_forces_colour(tmp_path, monkeypatch):
    """The CDK CLI runs the app with FORCE_COLOR=0, which makes pip's console colour its errors."""
    monkeypatch.setenv("FORCE_COLOR", "0")
    links = tmp_path / "links"
    write_sdist(links)
    with pytest.raises(DependencyError) as refused:
        install(
            _requirements(tmp_path, "onlysource==1.0\n"),
            ARM,
            cache=tmp_path / "cache",
            pip_options=["--no-index", f"--find-links={links}"],
        )
    message = str(refused.value)
    assert "\x1b" not in message and "x1b[" not in message  # nor the escape as repr() writes it
    assert "no wheel of 'onlysource==1.0' for python3.13 on arm64" in message


def test_colour_codes_are_stripped_from_whatever_pip_says():
    coloured = "\x1b[31mERROR: No matching distribution found for docopt==0.6.2\x1b[0m\x1b[31m\x1b[0m"
    assert dependencies.plain(coloured) == "ERROR: No matching distribution found for docopt==0.6.2"


@pytest.mark.parametrize("line", ["boto3==1.35.0", "botocore", "S3Transfer>=0.10", "Aws_Lambda.Powertools==3.1.0"])
def test_a_requirement_on_what_the_function_already_has_is_refused_naming_it(tmp_path, line):
    requirements = _requirements(tmp_path, f"# ours\n{PURE}\n{line}  # pinned\n")
    with pytest.raises(DependencyError) as refused:
        install(requirements, ARM, cache=tmp_path / "cache", python="/nonexistent/python")  # refused before pip
    name = dependencies.normalized(line.split("=")[0].split(">")[0])
    message = str(refused.value)
    assert message.startswith(f"{requirements} line 3: {line!r}: {name} is provided by ")
    assert "remove the line" in message and "\n" not in message


@pytest.mark.parametrize("line", ["pydantic==2.11.7", "Typing_Extensions>=4", "wrapt", "attrs==25.1.0", "cryptography"])
def test_a_requirement_on_what_the_powertools_layer_ships_is_refused_naming_it(tmp_path, line):
    """Both layers unpack into /opt/python, ours last: its copy would overwrite the Powertools layer's files."""
    requirements = _requirements(tmp_path, f"{PURE}\n{line}\n")
    with pytest.raises(DependencyError) as refused:
        install(requirements, ARM, cache=tmp_path / "cache", python="/nonexistent/python")  # refused before pip
    name = dependencies.normalized(re.split(r"[=<>]", line)[0])
    message = str(refused.value)
    assert message.startswith(f"{requirements} line 2: {line!r}: {name} is in the AWS-managed Powertools layer")
    assert "overwrite its files" in message and "remove the line" in message and "\n" not in message


def test_what_the_powertools_layer_ships_pulled_in_by_another_package_is_left_out_of_the_lambda_layer(tmp_path):
    links = tmp_path / "links"
    write_wheel(links, "py3-none-any", name="needsattrs", requires=("attrs>=20",))
    write_wheel(links, "py3-none-any", name="attrs", version="99.0")
    options = ["--no-index", f"--find-links={links}"]
    requirements = _requirements(tmp_path, "needsattrs==1.0\n")
    installed = install(requirements, ARM, cache=tmp_path / "cache", pip_options=options)
    assert sorted(path.name for path in installed.python_dir.iterdir()) == ["needsattrs-1.0.dist-info", "needsattrs.py"]
    # Local mode's functions run on this machine's environment, with no Powertools layer: the install keeps it.
    host = install(requirements, Target.host(), cache=tmp_path / "cache", pip_options=options)
    assert (host.python_dir / "attrs.py").is_file()


def _layer_closure(requires: dict[str, list[str]]) -> set[str]:
    """The distributions Powertools with every extra needs on the Lambda target, the runtime's SDK not followed."""
    environment = {
        "python_version": ARM.python_version,
        "python_full_version": f"{ARM.python_version}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "aarch64",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    found: set[str] = set()
    pending: list[tuple[str, set[str]]] = [("aws-lambda-powertools", {"all"})]
    while pending:
        name, extras = pending.pop()
        found.add(name)
        for line in requires[name]:
            requirement = Requirement(line)
            child = dependencies.normalized(requirement.name)
            marker = requirement.marker  # written for the requiring distribution's extras
            if marker is not None and not any(marker.evaluate({**environment, "extra": e}) for e in {"", *extras}):
                continue
            if child not in found and child not in dependencies.PROVIDED:
                pending.append((child, set(requirement.extras)))
    return found - {"aws-lambda-powertools"}


@pytest.mark.slow
def test_the_powertools_layers_distributions_are_the_pinned_releases_with_every_extra(tmp_path):
    """The checked-in list against the release's own metadata, resolved by pip from the index for the target
    (some 35 s: pip reads about twenty distributions' metadata from the index)."""
    assert dependencies.POWERTOOLS_LAYER_VERSION == AppSettings.powertools_version
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    command += ["--disable-pip-version-check", "--report", str(report), "--target", str(tmp_path / "t")]
    command += [*ARM.pip_options(), f"aws-lambda-powertools[all]=={dependencies.POWERTOOLS_LAYER_VERSION}"]
    subprocess.run(command, capture_output=True, text=True, check=True, timeout=240)
    resolved = {
        dependencies.normalized(item["metadata"]["name"]): item["metadata"].get("requires_dist") or []
        for item in json.loads(report.read_text())["install"]
    }
    assert _layer_closure(resolved) == dependencies.POWERTOOLS_LAYER


def test_the_installed_powertools_needs_nothing_outside_the_layers_list():
    """Offline, from this environment's copy when it is the pinned release: its own requirements, every extra."""
    installed = metadata.distribution("aws-lambda-powertools")
    if installed.version != dependencies.POWERTOOLS_LAYER_VERSION:
        pytest.skip(f"this environment has Powertools {installed.version}, the list is for the pinned release")
    direct = _layer_closure({"aws-lambda-powertools": installed.requires or [], **dict.fromkeys(_names(installed), [])})
    assert direct and direct <= dependencies.POWERTOOLS_LAYER


def _names(distribution: metadata.Distribution) -> list[str]:
    return [dependencies.normalized(Requirement(r).name) for r in distribution.requires or []]


def test_names_that_merely_start_like_a_provided_one_are_accepted():
    check_requirements("boto3-stubs==1.35.0\nbotocore-types\n-r other.txt\n", "requirements.txt")


def test_the_size_check_names_each_part_and_the_limit():
    mb = 1024 * 1024
    dependencies.check_unzipped_size({"code": 200 * mb, "packages": 50 * mb})  # exactly 250 MB fits
    with pytest.raises(DependencyError) as refused:
        dependencies.check_unzipped_size({"code": 1 * mb, "requirements.txt packages": 210 * mb, "Powertools": 45 * mb})
    assert str(refused.value).startswith(
        "the functions' code and layers would take 256.0 MB unzipped (code 1.0 MB, requirements.txt packages "
        "210.0 MB, Powertools 45.0 MB), over Lambda's 250.0 MB limit"
    )
