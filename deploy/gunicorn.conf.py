"""gunicorn's settings for AtelierEval behind nginx (deploy/nginx/atelier.conf):

    gunicorn -c deploy/gunicorn.conf.py atelier.wsgi

Command-line options override these (tests/test_nginx.py binds its own port and runs one worker).
"""

bind = "127.0.0.1:8000"  # the address in nginx's @UPSTREAM@
workers = 3
timeout = 60  # below nginx's proxy_read_timeout (75 s): gunicorn, not nginx, decides that a request took too long

# Request lines up to 8190 bytes, gunicorn's most (its default, 4094, is answered with gunicorn's own HTML 414 before
# Django sees the request). nginx's buffer for the request line (large_client_header_buffers, 8k) is below this, so
# every address nginx passes on reaches Django, and nginx answers a longer one itself, in JSON. Django refuses an API
# address over 4,096 bytes with a JSON 414 (atelier/api_errors.py, URL_MAX): one limit for API clients either way.
limit_request_line = 8190
