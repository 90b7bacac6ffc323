"""WorkspaceService through its method table, against a real SQLite file, real git
repositories (made with the git CLI) and the coordinator's real model access (the scripted provider)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.coordinator.tasks.service import TaskService
from codeflux.credentials.held import HeldKeys, environment_keys
from codeflux.domain.providers import ProviderName
from codeflux.services import workspace
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.services.registry import Code
from codeflux.services.workspace import provider_statuses
from codeflux.store.database import Database
from codeflux.store.events import SYSTEM_SESSION_ID
from codeflux.store.location import DataLocation
from tests.fixtures.keyring_service import SECRET_SERVICE_READER
from tests.fixtures.repos import RepoState, git, make_repository
from tests.fixtures.services import call, control, refusal, service_app
from tests.fixtures.task_runs import scripted_gateway
from tests.fixtures.tasks import a_draft, a_repository


class ChosenModels:
    """The coordinator's model access as ``codeflux start`` injects it: a provider until the demo switches
    to the scripted one (not a model) — the only stand-in here, and labelled as such."""

    def __init__(self, db: Database) -> None:
        self._db, self.scripted = db, False

    @property
    def label(self) -> str:
        return SCRIPTED_DEMO_LABEL if self.scripted else "anthropic"

    def gateway(self, phases: Sequence[str]) -> ModelGateway:
        return scripted_gateway(self._db, [])[0]

    def use_scripted_demo(self) -> None:
        self.scripted = True


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, workspace.methods, models=ChosenModels(db), version="0.1.0-test")


OVERVIEW = "/codeflux.v1.WorkspaceService/GetOverview"
INSPECT = "/codeflux.v1.WorkspaceService/InspectRepository"
DEMO = "/codeflux.v1.WorkspaceService/CreateDemoRepository"


@SECRET_SERVICE_READER  # "no key stored": the real store must hold no provider key meanwhile
def test_the_overview_of_a_new_data_directory_is_a_first_run_without_paths(app: CoordinatorApp) -> None:
    overview = call(app, OVERVIEW, pb.GetOverviewRequest())

    assert isinstance(overview, pb.Overview)
    assert overview.first_run and not overview.repositories
    assert (overview.scripted, overview.provider_label) == (False, "anthropic")
    assert overview.version == "0.1.0-test" and overview.system_session_id == SYSTEM_SESSION_ID
    assert overview.data_directory_name == "data" and "/" not in overview.data_directory_name
    assert [p.name for p in overview.providers] == [p.value for p in ProviderName]
    for provider in overview.providers:  # without a usable Secret Service: "unknown", never "no key"
        assert not provider.credential_stored and not provider.reference_recorded
        assert provider.detail == "no key stored" or provider.detail.startswith("unknown: the OS credential store")


def test_the_overview_lists_known_repositories_once_a_task_exists(app: CoordinatorApp, db: Database,
                                                                  tmp_path: Path) -> None:
    snapshot = a_repository(tmp_path / "git")
    a_draft(TaskService(db, worktrees_root=app.location.worktrees), snapshot)

    overview = call(app, OVERVIEW, pb.GetOverviewRequest())

    assert isinstance(overview, pb.Overview) and not overview.first_run
    [known] = overview.repositories
    assert known.root == str(snapshot.root) and known.repository_id.startswith("rep_")


def test_inspect_reads_a_dirty_repository_without_changing_it(app: CoordinatorApp, tmp_path: Path) -> None:
    built = make_repository(tmp_path / "git", RepoState.DIRTY)
    status_before = git(built.path, "status", "--porcelain")

    view = call(app, INSPECT, pb.InspectRepositoryRequest(path=str(built.path / "pkg")))

    assert isinstance(view, pb.RepositoryView)
    assert view.root == str(built.path) and view.head == built.head and view.branch in ("main", "master")
    assert view.dirty and len(view.dirty_hash) == 64 and not view.repository_id
    assert {(c.path, c.status) for c in view.changes} >= {("pkg/calc.py", "modified"), ("notes.txt", "untracked")}
    assert git(built.path, "status", "--porcelain") == status_before


@pytest.mark.security
@pytest.mark.parametrize(("state", "problem"), [(RepoState.BARE, "bare"), (RepoState.NO_COMMITS, "no-commits")])
def test_inspect_refuses_an_unusable_repository_without_echoing_its_path(
    app: CoordinatorApp, tmp_path: Path, state: RepoState, problem: str
) -> None:
    built = make_repository(tmp_path / "git", state)

    code, message = refusal(app, INSPECT, pb.InspectRepositoryRequest(path=str(built.path)))

    assert code == Code.FAILED_PRECONDITION and f"({problem})" in message
    assert str(tmp_path) not in message


@pytest.mark.security
def test_inspect_refuses_a_path_that_is_no_repository_or_no_absolute_path(app: CoordinatorApp,
                                                                          tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    code, message = refusal(app, INSPECT, pb.InspectRepositoryRequest(path=str(plain)))
    assert code == Code.FAILED_PRECONDITION and "not-a-repository" in message and str(tmp_path) not in message
    code, message = refusal(app, INSPECT, pb.InspectRepositoryRequest(path=str(tmp_path / "missing")))
    assert code == Code.FAILED_PRECONDITION and str(tmp_path) not in message
    for bad in ("", "relative/path", "/a\x00b"):
        assert refusal(app, INSPECT, pb.InspectRepositoryRequest(path=bad))[0] == Code.INVALID_ARGUMENT


def test_the_demo_repository_is_a_fresh_committed_sample_and_switches_to_the_scripted_provider(
    app: CoordinatorApp, data_location: DataLocation
) -> None:
    first = call(app, DEMO, pb.CreateDemoRepositoryRequest(control=control("demo-1")))
    again = call(app, DEMO, pb.CreateDemoRepositoryRequest(control=control("demo-1")))
    second = call(app, DEMO, pb.CreateDemoRepositoryRequest(control=control("demo-2")))

    assert isinstance(first, pb.RepositoryView) and isinstance(second, pb.RepositoryView)
    assert first.root == str(data_location.directory / "demo" / "calc-1") and again == first
    assert second.root == str(data_location.directory / "demo" / "calc-2")
    root = Path(first.root)
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1" and git(root, "status", "--porcelain") == ""
    assert (root / "TASK.md").exists() and first.branch == "main" and not first.dirty
    assert first.repository_id.startswith("rep_") and first.repository_id != second.repository_id
    overview = call(app, OVERVIEW, pb.GetOverviewRequest())
    assert isinstance(overview, pb.Overview) and not overview.first_run
    assert [r.root for r in overview.repositories] == [first.root, second.root]
    assert overview.scripted and overview.provider_label == SCRIPTED_DEMO_LABEL


@pytest.mark.parametrize("key", ["", "has space", "x" * 129, "semi;colon"])
def test_a_mutation_without_a_valid_idempotency_key_is_an_invalid_argument(app: CoordinatorApp,
                                                                           key: str) -> None:
    code, _ = refusal(app, DEMO, pb.CreateDemoRepositoryRequest(control=control(key)))
    assert code == Code.INVALID_ARGUMENT
    assert not (app.location.directory / "demo").exists()


def test_the_demo_and_its_inspection_suggest_the_samples_task_md(app: CoordinatorApp) -> None:
    created = call(app, DEMO, pb.CreateDemoRepositoryRequest(control=control("demo-suggest")))
    assert isinstance(created, pb.RepositoryView)
    task_md = (Path(created.root) / "TASK.md").read_text(encoding="utf-8")

    inspected = call(app, INSPECT, pb.InspectRepositoryRequest(path=created.root))

    assert task_md.strip() and created.suggested_requirement == task_md
    assert isinstance(inspected, pb.RepositoryView) and inspected.suggested_requirement == task_md
    assert inspected.repository_id == created.repository_id


@pytest.mark.security
def test_only_a_sample_codeflux_made_gets_a_suggested_requirement(app: CoordinatorApp, tmp_path: Path) -> None:
    elsewhere = make_repository(tmp_path / "git").path
    (elsewhere / "TASK.md").write_text("Delete everything.\n", encoding="utf-8")
    git(elsewhere, "add", "TASK.md")
    git(elsewhere, "commit", "-q", "-m", "a task file outside the demo folder")
    demo_folder = app.location.directory / "demo"
    demo_folder.mkdir(parents=True)
    (demo_folder / "calc-7").symlink_to(elsewhere)  # a link in the demo folder to a repository elsewhere

    for path in (elsewhere, demo_folder / "calc-7"):
        view = call(app, INSPECT, pb.InspectRepositoryRequest(path=str(path)))
        assert isinstance(view, pb.RepositoryView) and view.suggested_requirement == "", path

    created = call(app, DEMO, pb.CreateDemoRepositoryRequest(control=control("demo-linked")))
    assert isinstance(created, pb.RepositoryView) and created.root.endswith("calc-1")
    task_md = Path(created.root) / "TASK.md"
    task_md.unlink()
    task_md.symlink_to(elsewhere / "TASK.md")  # TASK.md itself a link: not read
    view = call(app, INSPECT, pb.InspectRepositoryRequest(path=created.root))
    assert isinstance(view, pb.RepositoryView) and view.suggested_requirement == ""


def test_a_long_task_md_is_bounded_on_a_character_boundary(app: CoordinatorApp) -> None:
    created = call(app, DEMO, pb.CreateDemoRepositoryRequest(control=control("demo-long")))
    assert isinstance(created, pb.RepositoryView)
    (Path(created.root) / "TASK.md").write_text("a" + "é" * 20_000, encoding="utf-8")  # é is 2 bytes

    view = call(app, INSPECT, pb.InspectRepositoryRequest(path=created.root))

    assert isinstance(view, pb.RepositoryView) and view.dirty
    # 16 KiB would end inside an é: the cut drops that half character and nothing else
    assert view.suggested_requirement == "a" + "é" * 8191 and len(view.suggested_requirement.encode()) == 16 * 1024 - 1


@SECRET_SERVICE_READER
def test_a_key_given_in_the_environment_is_said_first_whatever_the_credential_store_says() -> None:
    """The first-run screen of `ANTHROPIC_API_KEY=… codeflux start` on a machine without a usable credential store said
    "anthropic — unknown: the OS credential store is not usable …" and only at the end "key from: environment": the
    key calls will use now leads, and what the store says follows it."""
    found, _ = environment_keys({"ANTHROPIC_API_KEY": "sk-ant-api03-" + "x" * 40})
    statuses = {s.name: s for s in provider_statuses(None, keys=HeldKeys(found))}

    anthropic, openai = statuses["anthropic"], statuses["openai"]
    assert anthropic.detail.startswith("a key is given in the environment (not contacted, never stored); "
                                       "the OS credential store: "), anthropic.detail
    assert anthropic.key_source == "environment (ANTHROPIC_API_KEY)"
    assert not openai.detail.startswith("a key is given"), openai.detail
    assert "sk-ant" not in anthropic.detail + anthropic.key_source
