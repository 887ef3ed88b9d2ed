import pytest

from fakes import FakeBackend, FakeBenchmark


@pytest.fixture
def fake_benchmark() -> FakeBenchmark:
    return FakeBenchmark()


@pytest.fixture(params=[0, 1, 3], ids=lambda n: f"{n}gpu")
def fake_backend(request: pytest.FixtureRequest) -> FakeBackend:
    return FakeBackend(gpus=request.param)
