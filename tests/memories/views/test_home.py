def test_the_home_page_shows_the_mcp_url_and_how_to_connect(client, db):
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "http://testserver/mcp" in page
    assert "createtoken" in page and "Authorization: Bearer gno_" in page


def test_the_home_page_only_answers_get(client):
    assert client.post("/").status_code == 405
