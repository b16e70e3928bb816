from django.urls import path

from . import views

urlpatterns = [path("tasks/", views.task_list, name="tasks"), path("tasks/<int:pack_id>/<str:task_id>/", views.task_detail, name="task")]
