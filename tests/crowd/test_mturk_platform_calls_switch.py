"""With CROWD_PLATFORM_CALLS off (the test settings), a real (unstubbed) MTurk client or the Prolific
transport refuses before anything leaves the process, and says why; a stubbed client still answers."""
import pytest
from botocore.stub import Stubber

from crowd.clients import mturk, prolific
from crowd.errors import PlatformError


def test_an_unstubbed_mturk_client_refuses_to_send_when_platform_calls_are_off(monkeypatch, settings):
    settings.CROWD_PLATFORM_CALLS = False
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret")
    client = mturk.MTurk(sandbox=True)
    with pytest.raises(PlatformError, match="switched off") as refused:
        client.balance()
    assert refused.value.call == "GetAccountBalance"


def test_a_stubbed_mturk_client_still_answers_when_platform_calls_are_off(settings):
    settings.CROWD_PLATFORM_CALLS = False
    client = mturk.client_factory(sandbox=True)
    with Stubber(client) as stub:
        stub.add_response("get_account_balance", {"AvailableBalance": "10000.00"})
        assert mturk.MTurk(sandbox=True, client=client).balance() == "10000.00"


def test_the_prolific_transport_refuses_when_platform_calls_are_off(settings):
    settings.CROWD_PLATFORM_CALLS = False
    status, body = prolific.UrllibTransport().request("GET", "https://api.prolific.com/api/v1/users/me/", {}, None)
    assert status == 0 and "switched off" in body["error"]
