"""WSGI entry point for gunicorn: `gunicorn gnosem.wsgi`."""

import os

from django.core.wsgi import get_wsgi_application

from gnosem.checks import refuse_to_serve_on_errors

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gnosem.settings")
application = get_wsgi_application()
# gunicorn runs no system checks: a worker refuses to start on an Error, as manage.py commands do.
refuse_to_serve_on_errors()
