from django.urls import path

from . import views

urlpatterns = [
    path("judge/", views.judge_validity, name="judge"),
    path("rate/", views.rate, name="rate"),
    path("rate/queue/", views.rate_queue, name="rate_queue"),
    path("rate/<int:pk>/", views.rate_save, name="rate_save"),
    path("rate/<int:pk>/image", views.rate_image, name="rate_image"),
]
