from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from accounts.activity import record_failed_sign_in, record_sign_in

        user_logged_in.connect(record_sign_in, dispatch_uid="accounts.activity.sign_in")
        user_login_failed.connect(record_failed_sign_in, dispatch_uid="accounts.activity.sign_in_failed")
