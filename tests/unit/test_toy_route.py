"""A new route is one class registered in the route table: a toy route defined and registered here alone (no other
file changes) compiles through the driver, the CLI and bench plans, and the driver never asks which route it holds.

The toy route compiles the problem's plain linalg source with IREE's default for its target (nothing scheduled),
names one device input, and checks in the output that the dispatch it expects is there."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pipelines import cli, flow
from pipelines.inspect import KernelStats
from pipelines.job import Job, Prepared
from pipelines.routes import ROUTES, Route, route_for
from pipelines.targets import TARGETS, register, unregister
from pipelines.verify import FallbackError
from transforms.problem import Gemm, build_module

TOY_ROUTE, TOY_TARGET = "toy-route", "toy-sm80"


class ToyRoute(Route):
    name = TOY_ROUTE
    about = "a test's route: IREE's default on the plain source"
    seen: list[str] = []

    def prepare(self, job: Job) -> Prepared:
        from iree.compiler import ir

        with ir.Context(), ir.Location.unknown():
            return Prepared(job, str(build_module(job.gemms[0])), None, (None,))

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        self.seen.append(prepared.job.pipeline)
        if not stats:
            raise FallbackError("toy: no dispatch in the output.")

    def verified(self, job: Job) -> bool:
        return True

    def summary(self, job: Job) -> list[str]:
        return ["the toy route's plain source"]


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(ROUTES, TOY_ROUTE, ToyRoute())
    register(dataclasses.replace(TARGETS["sm_80"], name=TOY_TARGET, schedule_route=TOY_ROUTE,
                                 description="sm_80 whose schedules take the toy route"))
    ToyRoute.seen.clear()
    yield ROUTES[TOY_ROUTE]
    unregister(TOY_TARGET)


def test_a_job_naming_the_toy_route_compiles_through_it(toy, tmp_path):
    job = Job(TARGETS["sm_80"], "toy", (Gemm(128, 128, 64, "f16", "nn"),), (None,), route=TOY_ROUTE)
    assert route_for(job) is toy
    report = flow.compile_job(flow.prepare(job), tmp_path / "a")
    assert report["verified"] is True and report["schedule_summary"] == ["the toy route's plain source"]
    assert ToyRoute.seen == ["toy"] and (tmp_path / "a" / "gemm.vmfb").is_file()


def test_a_target_whose_schedule_route_is_the_toy_one(toy, tmp_path):
    """The CLI takes the toy target and reaches the toy route through the target table."""
    out = tmp_path / "b"
    assert cli.main(["compile", "--target", TOY_TARGET, "--shape", "128x128x64", "--dtype", "f16", "-o",
                     str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["target"] == TOY_TARGET and report["schedule_summary"] == ["the toy route's plain source"]
    assert ToyRoute.seen == ["default"]


def test_without_the_registration_the_route_is_unknown(tmp_path):
    job = Job(TARGETS["sm_80"], "toy", (Gemm(128, 128, 64, "f16", "nn"),), (None,), route=TOY_ROUTE)
    with pytest.raises(Exception, match=f"unknown route '{TOY_ROUTE}'"):
        route_for(job)
